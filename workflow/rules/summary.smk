# Stage 5: the tables a report quotes: each variant's best configuration per problem size,
# with its share of the library baseline, speedup over the first rung, and bound; and what
# changed between consecutive rungs of the ladder at each size. Each as CSV, and as a page
# the report shows in place (sortable, filtered as one types), with every finding of ncu's.
rule summary:
    input:
        table="results/{experiment}/table.parquet",
        findings="results/{experiment}/findings.parquet",
        # the experiment's questions (their answers end summary.md), in a file that changes
        # only with them: editing a question redoes this rule alone
        # a search's rounds: what it tried and skipped (none for a grid experiment)
        rounds=lambda wc: STUDY.rounds(wc.experiment).files(),
        questions=lambda wc: str(
            write_if_changed(
                Path(".snakemake/ncuflow/questions") / f"{wc.experiment}.json",
                questions_json(STUDY.experiments[wc.experiment].questions),
            )
        ),
    output:
        csv="results/{experiment}/summary.csv",
        html=report(
            "results/{experiment}/summary.html",
            caption="../report/summary.rst",
            category="{experiment}",
            labels={
                "#": "01",
                "result": "best per size: time, % of library, bound",
            },
        ),
        md="results/{experiment}/summary.md",
        rungs="results/{experiment}/rungs.csv",
        rungs_html=report(
            "results/{experiment}/rungs.html",
            caption="../report/rungs.rst",
            category="{experiment}",
            labels={
                "#": "02",
                "result": "rung to rung: what changed, how much faster",
            },
        ),
        findings_html=report(
            "results/{experiment}/findings.html",
            caption="../report/findings.rst",
            category="{experiment}",
            labels={
                "#": "11",
                "result": "findings: ncu's advice, largest gain first",
            },
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
            "--questions",
            input.questions,
            ["--rounds", input.rounds] if input.rounds else [],
        ),
    shell:
        "{params.cmd} --log {log:q}"
