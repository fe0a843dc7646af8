"""From bounds to a verdict: statuses and trust, the judge, the capacity check, the controls, robustness and detection floors, the guardrail, the kinds of run."""
