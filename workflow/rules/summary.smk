# Stage 5: the tables a report quotes: each variant's best configuration per problem size,
# with its share of the library baseline, speedup over the first rung, and bound; and what
# changed between consecutive rungs of the ladder at each size.


rule summary:
    input:
        table="results/{experiment}/table.parquet",
        findings="results/{experiment}/findings.parquet",
    output:
        csv=report(
            "results/{experiment}/summary.csv",
            caption="../report/summary.rst",
            category="{experiment}",
            subcategory="tables",
            labels={"table": "best configuration per variant and size"},
        ),
        md="results/{experiment}/summary.md",
        rungs=report(
            "results/{experiment}/rungs.csv",
            caption="../report/rungs.rst",
            category="{experiment}",
            subcategory="tables",
            labels={"table": "what changed between rungs"},
        ),
    log:
        "results/{experiment}/logs/summary.log",
    params:
        cmd=lambda wc, input, output: command_line(
            "summary",
            "--table",
            input.table,
            "--kernels-dir",
            str(STUDY.kernels_dir),
            "--csv",
            output.csv,
            "--md",
            output.md,
            "--findings",
            input.findings,
            "--rungs",
            output.rungs,
        ),
    shell:
        "{params.cmd} --log {log:q}"
