"""The device: which mode a job runs in, the facts of the GPU it ran on, and the
ceilings measured on it."""
