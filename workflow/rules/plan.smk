# Stage 1: the configurations of one (experiment, variant), expanded from the config.
# The plan is a param, so any change to the grid, the sizes or the kernel sources
# (through the family fingerprint) makes Snakemake plan, measure and profile again.


rule plan:
    output:
        "results/{experiment}/{variant}/plan.json",
    log:
        "results/{experiment}/{variant}/logs/plan.log",
    params:
        plan=lambda wc: STUDY.plan_json(wc.experiment, wc.variant),
    run:
        Path(output[0]).write_text(params.plan)
        Path(log[0]).write_text(f"wrote {output[0]}\n")
