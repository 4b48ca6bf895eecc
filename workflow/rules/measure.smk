# Stage 2 (GPU): compile, check against the reference, and time every configuration.


rule measure:
    input:
        plan="results/{experiment}/{variant}/plan.json",
    output:
        "results/{experiment}/{variant}/measure.json",
    log:
        "results/{experiment}/{variant}/logs/measure.log",
    resources:
        gpu=1,
    params:
        source=MODE_ARGS,
    shell:
        "{PY} -m ncuflow measure --plan {input.plan} --out {output} {params.source} --log {log}"
