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
        # read beside each metrics.parquet: what ncu could not profile
        profile_errors=lambda wc: [
            f"results/{wc.experiment}/{variant}/profile_errors.json"
            for variant in STUDY.experiments[wc.experiment].variants
        ],
        device="results/device.json",
    output:
        table="results/{experiment}/table.parquet",
        csv="results/{experiment}/table.csv",
    log:
        "results/{experiment}/logs/collect.log",
    run:
        jobs = [
            ["--job", *input.jobs[i : i + 3]] for i in range(0, len(input.jobs), 3)
        ]
        stage(
            "collect",
            "--experiment",
            wildcards.experiment,
            jobs,
            "--device",
            input.device,
            "--out",
            output.table,
            log=log[0],
        )
