"""``ncuflow check``: a study's kernel families checked on a machine without a GPU, before
any GPU time is spent (check.variants), the study read as Snakemake reads it
(check.command)."""
