"""The study: a config validated (its schema, then its meaning) and expanded into the
plans of its jobs, before any GPU work."""
