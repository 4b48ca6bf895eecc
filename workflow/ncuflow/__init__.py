"""ncuflow: verify, time and profile CUDA kernel variants under Nsight Compute.

Each stage of the Snakemake workflow is a module here with plain functions:
spec (kernel families and variants), expr (safe expressions), config (validation),
expand (configurations), vocab (statuses and NVTX names every stage shares), problem
(inputs drawn, outputs poisoned and checked against the reference), harness (compile,
launch, time; GPU or host) with timing (adaptive repeats), profile (ncu), ncu_rep (the
report at full precision), metrics (the registry of counters, ceilings and columns),
derive (registry columns per configuration), analysis (roofs and the bound rule),
ceilings (measured ceilings), collect, plots, device, replay.
"""

__version__ = "0.1.0"
