"""The reference model M': its recalibration on the day's held-out rows, the nightly controls, the data diagnostic."""
