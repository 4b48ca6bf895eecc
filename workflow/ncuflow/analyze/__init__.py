"""From measurements to verdicts: the registry's columns per configuration (derive), the
bound rule (bound), and one table per experiment (collect)."""
