"""ncuflow: verify, time and profile CUDA kernel variants under Nsight Compute.

Each stage of the Snakemake workflow is a module here with plain functions:
spec (kernel families and variants), expr (safe expressions), config (validation),
expand (configurations), harness (GPU: compile, check, time), profile (ncu),
ncu_csv (parsing), analysis (roofline and bound), collect, plots, device, replay.
"""

__version__ = "0.1.0"
