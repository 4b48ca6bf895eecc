"""Captures: a GPU run's records kept for replay, and where a replay differs from the
config that asks for it."""
