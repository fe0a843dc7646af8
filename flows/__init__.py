"""Orchestration: Prefect flows and the labeldp-audit command line. Holds no math."""
