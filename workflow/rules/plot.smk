# Stage 4: the experiment's figures (ncuflow.report.figures.FIGURES: hierarchical roofline,
# performance against size, parameter sweeps, Speed of Light, occupancy, modelled against
# measured traffic), and the figures a family declares itself (figures: in family.yaml).
# In the report each experiment is one folder listing its tables and figures (no subfolder:
# one click from the start page), each labelled with its place in reading order (#) and,
# after its name, what it shows in a few words (the caption beside it says the rest; the
# start page links each by its name). Short: the list is as wide as its longest line.
FIGURE_LABELS = {
    "roofline": {"#": "03", "result": "roofline: memory- or compute-bound, where"},
    "performance": {"#": "04", "result": "performance: throughput against size"},
    "speed_of_light": {"#": "05", "result": "speed of light: which unit is busiest"},
    "sweep": {"#": "06", "result": "sweep: time against each tunable"},
    "occupancy": {"#": "07", "result": "occupancy: active warps, and the limiter"},
    "traffic": {"#": "08", "result": "traffic: modelled against measured DRAM"},
}


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
                labels=FIGURE_LABELS[figure],
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
            labels={"#": "10", "result": "{figure}: the family's own figure"},
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
            labels={"#": "09", "result": "search progress: best time against tried"},
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


# The energy tier's figure (energy against time, the energy roofline) and table (each
# variant's most energy-efficient configuration per size beside its fastest), for an
# experiment with energy.
rule energy_figure:
    input:
        table="results/{experiment}/table.parquet",
        device="results/device.json",
    output:
        png=report(
            f"results/{{experiment}}/{ENERGY_FIGURE}.png",
            caption=f"../report/{ENERGY_FIGURE}.rst",
            category="{experiment}",
            labels={"#": "12", "result": "energy: per launch, and its roofline"},
        ),
        svg=f"results/{{experiment}}/{ENERGY_FIGURE}.svg",
        csv=f"results/{{experiment}}/{ENERGY_FIGURE}.csv",
        html=report(
            f"results/{{experiment}}/{ENERGY_FIGURE}.html",
            caption="../report/energy_table.rst",
            category="{experiment}",
            labels={"#": "13", "result": "energy per variant: least beside fastest"},
        ),
    log:
        f"results/{{experiment}}/logs/plot_{ENERGY_FIGURE}.log",
    params:
        cmd=lambda wc, input: command_line(
            "plot",
            ["--table", input.table, "--device", input.device],
            ["--kernels-dir", str(STUDY.kernels_dir), "--figure", ENERGY_FIGURE],
            ["--out-dir", f"results/{wc.experiment}"],
        ),
    shell:
        "{params.cmd} --log {log:q}"
