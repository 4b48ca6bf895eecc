# Stage 3 (GPU): one ncu process profiles every configuration that measured ok; every
# numeric value of its report goes, at full precision, into ncu_long.parquet.


rule profile:
    input:
        plan="results/{experiment}/{variant}/plan.json",
        measure="results/{experiment}/{variant}/measure.json",
    output:
        **(
            {
                "report": "results/{experiment}/{variant}/profile.ncu-rep",
                "csv": "results/{experiment}/{variant}/ncu_raw.csv",
            }
            if MODE == "gpu"
            else {}
        ),
        long="results/{experiment}/{variant}/ncu_long.parquet",
    log:
        "results/{experiment}/{variant}/logs/profile.log",
    resources:
        gpu=1,
    params:
        source=MODE_ARGS,
        report=lambda wc, output: (
            f"--report {output.report} --csv {output.csv}" if MODE == "gpu" else ""
        ),
        sections=" ".join(config["ncu"]["sections"]),
        metrics=" ".join(config["ncu"]["extra_metrics"]),
        clock=config["ncu"]["clock_control"],
    shell:
        "{PY} -m ncuflow profile --plan {input.plan} --measure {input.measure}"
        " --long {output.long} {params.report} {params.source} --clock-control {params.clock}"
        " --sections {params.sections} --metrics {params.metrics} --log {log}"
