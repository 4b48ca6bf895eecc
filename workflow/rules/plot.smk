# Stage 6: the experiment's figures: DRAM roofline, and GFLOP/s against problem size.


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
        size_axis=lambda wc: STUDY.experiments[wc.experiment].family.size_axis,
    shell:
        "{PY} -m ncuflow plot --table {input.table} --device {input.device}"
        " --size-axis {params.size_axis} --out-dir results/{wildcards.experiment} --log {log}"
