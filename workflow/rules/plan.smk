# Stage 1: the configurations of one (experiment, variant), expanded from the config. The
# main process writes each plan once under .snakemake/ncuflow/plans/, named by a hash of
# its content; the job copies it. A change to the grid, the sizes or the kernel sources
# (through the family fingerprint) changes the name, so Snakemake plans, measures and
# profiles again.


rule plan:
    output:
        "results/{experiment}/{variant}/plan.json",
    log:
        "results/{experiment}/{variant}/logs/plan.log",
    params:
        plan=lambda wc: STUDY.plan_file(wc.experiment, wc.variant),
    shell:
        "cp {params.plan:q} {output:q} && echo 'copied {params.plan:q}' > {log:q}"
