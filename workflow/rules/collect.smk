# Stage 5: one table per experiment, one row per configuration (skipped ones included).


def collect_jobs(wildcards):
    return [
        f"results/{wildcards.experiment}/{variant}/{name}"
        for variant in STUDY.experiments[wildcards.experiment].variants
        for name in ("plan.json", "measure.json", "metrics.parquet")
    ]


rule collect:
    input:
        jobs=collect_jobs,
        device="results/device.json",
    output:
        table="results/{experiment}/table.parquet",
        csv="results/{experiment}/table.csv",
    log:
        "results/{experiment}/logs/collect.log",
    params:
        jobs=lambda wc, input: " ".join(
            "--job " + " ".join(input.jobs[i : i + 3])
            for i in range(0, len(input.jobs), 3)
        ),
    shell:
        "{PY} -m ncuflow collect --experiment {wildcards.experiment} {params.jobs}"
        " --device {input.device} --out {output.table} --log {log}"
