# Stage 3: one table per experiment, one row per configuration (skipped ones included),
# and every variant's findings and source lines as one table each.


rule collect:
    input:
        jobs=lambda wc: STUDY.collect_inputs(wc.experiment),
        # read beside each metrics.parquet: what ncu could not profile, its findings, the
        # explain tier's values and lines, and the values the longest kernels come from
        beside=lambda wc: [
            path
            for name in (PROFILE_ERRORS, *PROFILE_EXTRAS, NCU_LONG)
            for path in STUDY.collect_inputs(wc.experiment, name)
        ],
        device="results/device.json",
    output:
        table="results/{experiment}/table.parquet",
        csv="results/{experiment}/table.csv",
        findings="results/{experiment}/findings.parquet",
        lines="results/{experiment}/source_lines.parquet",
    log:
        "results/{experiment}/logs/collect.log",
    params:
        cmd=lambda wc, input, output: command_line(
            "collect",
            "--experiment",
            wc.experiment,
            [["--job", *input.jobs[i : i + 3]] for i in range(0, len(input.jobs), 3)],
            "--device",
            input.device,
            "--out",
            output.table,
            "--capture",
            CAPTURE,
            NCU_ARGS,
            ["--profile", STUDY.profile_mode(wc.experiment)],
        ),
    shell:
        "{params.cmd} --log {log:q}"
