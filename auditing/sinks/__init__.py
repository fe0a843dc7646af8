"""Where verdicts go: the warehouse, the HTML reports and the alerts. A sink renders a Verdict and calls no verdict math."""
