# Stage 5: the tables a report quotes: each variant's best configuration per problem size,
# with its share of the library baseline, speedup over the first rung, and bound.


rule summary:
    input:
        table="results/{experiment}/table.parquet",
    output:
        csv=report(
            "results/{experiment}/summary.csv",
            caption="../report/summary.rst",
            category="{experiment}",
            subcategory="tables",
            labels={"table": "best configuration per variant and size"},
        ),
        md="results/{experiment}/summary.md",
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
        ),
    shell:
        "{params.cmd} --log {log:q}"
