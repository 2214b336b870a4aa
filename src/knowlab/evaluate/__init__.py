"""Checkpoint evaluation: log-likelihood scoring and the evaluation suites."""
