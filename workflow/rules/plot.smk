# Stage 4: the experiment's figures (ncuflow.report.figures.FIGURES: hierarchical roofline,
# performance against size, parameter sweeps, Speed of Light, occupancy, modelled against
# measured traffic), and the figures a family declares itself (figures: in family.yaml).


rule plot:
    input:
        table="results/{experiment}/table.parquet",
        device="results/device.json",
    output:
        **{
            figure: report(
                f"results/{{experiment}}/{figure}.png",
                caption=f"../report/{figure}.rst",
                category="{experiment}",
                subcategory="figures",
                labels={"figure": figure.replace("_", " ")},
            )
            for figure in STANDARD_FIGURES
        },
        svg=expand("results/{{experiment}}/{figure}.svg", figure=STANDARD_FIGURES),
    log:
        "results/{experiment}/logs/plot.log",
    # one process per figure where --cores allows: plotting is the tail of every run
    threads: len(STANDARD_FIGURES)
    params:
        cmd=lambda wc, input, threads: command_line(
            "plot",
            "--table",
            input.table,
            "--device",
            input.device,
            "--kernels-dir",
            str(STUDY.kernels_dir),
            "--out-dir",
            f"results/{wc.experiment}",
            "--processes",
            threads,
            ["--separate-sizes"] if STUDY.separate_sizes(wc.experiment) else [],
        ),
    shell:
        "{params.cmd} --log {log:q}"


rule family_figure:
    input:
        table="results/{experiment}/table.parquet",
        device="results/device.json",
    output:
        png=report(
            "results/{experiment}/{figure}.png",
            caption="../report/family_figure.rst",
            category="{experiment}",
            subcategory="figures",
            labels={"figure": "{figure}"},
        ),
        svg="results/{experiment}/{figure}.svg",
    log:
        "results/{experiment}/logs/plot_{figure}.log",
    wildcard_constraints:
        figure="|".join(STUDY.family_figures()) or "(?!)",
    params:
        cmd=lambda wc, input: command_line(
            "plot",
            "--table",
            input.table,
            "--device",
            input.device,
            "--kernels-dir",
            str(STUDY.kernels_dir),
            "--figure",
            wc.figure,
            "--out-dir",
            f"results/{wc.experiment}",
        ),
    shell:
        "{params.cmd} --log {log:q}"


# A search's progress: the best time found against the configurations measured, per size.
rule search_figure:
    input:
        table="results/{experiment}/table.parquet",
        device="results/device.json",
        rounds=lambda wc: STUDY.rounds(wc.experiment).files(),
    output:
        png=report(
            f"results/{{experiment}}/{SEARCH_FIGURE}.png",
            caption=f"../report/{SEARCH_FIGURE}.rst",
            category="{experiment}",
            subcategory="figures",
            labels={"figure": "search progress"},
        ),
        svg=f"results/{{experiment}}/{SEARCH_FIGURE}.svg",
    log:
        f"results/{{experiment}}/logs/plot_{SEARCH_FIGURE}.log",
    params:
        cmd=lambda wc, input: command_line(
            "plot",
            ["--table", input.table, "--device", input.device],
            ["--kernels-dir", str(STUDY.kernels_dir), "--figure", SEARCH_FIGURE],
            ["--rounds", input.rounds, "--out-dir", f"results/{wc.experiment}"],
        ),
    shell:
        "{params.cmd} --log {log:q}"
