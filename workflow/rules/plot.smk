# Stage 6: the experiment's figures: DRAM roofline, and GFLOP/s against problem size; and
# the figures a family declares itself (figures: in family.yaml).


rule plot:
    input:
        table="results/{experiment}/table.parquet",
        device="results/device.json",
    output:
        multiext("results/{experiment}/roofline", ".png", ".svg"),
        multiext("results/{experiment}/gflops_vs_size", ".png", ".svg"),
    log:
        "results/{experiment}/logs/plot.log",
    params:
        kernels_dir=config["kernels_dir"],
    shell:
        "{PY} -m ncuflow plot --table {input.table} --device {input.device}"
        " --kernels-dir {params.kernels_dir} --out-dir results/{wildcards.experiment}"
        " --log {log}"


rule family_figure:
    input:
        table="results/{experiment}/table.parquet",
        device="results/device.json",
    output:
        multiext("results/{experiment}/{figure}", ".png", ".svg"),
    log:
        "results/{experiment}/logs/plot_{figure}.log",
    wildcard_constraints:
        figure="|".join(STUDY.family_figures()) or "(?!)",
    params:
        kernels_dir=config["kernels_dir"],
    shell:
        "{PY} -m ncuflow plot --table {input.table} --device {input.device}"
        " --kernels-dir {params.kernels_dir} --figure {wildcards.figure}"
        " --out-dir results/{wildcards.experiment} --log {log}"
