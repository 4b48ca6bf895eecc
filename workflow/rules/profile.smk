# Stage 2 (GPU): ncu profiles every configuration of a part that ran to the end,
# ncu.chunk_size per process (each chunk kept in profile_chunks/ as it completes, so an
# interrupted run profiles again only what was missing); every numeric value of the
# reports goes, at full precision, into ncu_long.parquet, and the registry's columns per
# configuration into metrics.parquet; what ncu could not profile, into profile_errors.json.
# Nsight Compute's rule results go into findings.parquet; the explain tier (ncu.explain: a
# second ncu pass with ncu.explain_sections over each size's fastest configuration) into
# explain_long.parquet and, per source line, source_lines.parquet.


rule profile:
    input:
        plan="results/{experiment}/{variant}/{part}/plan.json",
        measure="results/{experiment}/{variant}/{part}/measure.json",
    output:
        csv="results/{experiment}/{variant}/{part}/ncu_raw.csv",
        long="results/{experiment}/{variant}/{part}/ncu_long.parquet",
        metrics="results/{experiment}/{variant}/{part}/metrics.parquet",
        errors="results/{experiment}/{variant}/{part}/profile_errors.json",
        findings="results/{experiment}/{variant}/{part}/findings.parquet",
        explain="results/{experiment}/{variant}/{part}/explain_long.parquet",
        lines="results/{experiment}/{variant}/{part}/source_lines.parquet",
    log:
        "results/{experiment}/{variant}/{part}/logs/profile.log",
    priority: lambda wc: STUDY.priority(wc.experiment, wc.variant, wc.part)
    resources:
        gpu=lambda wc: STUDY.gpus(wc.experiment, wc.variant),
    params:
        cmd=lambda wc, input, output: command_line(
            "profile",
            "--plan",
            input.plan,
            "--measure",
            input.measure,
            "--long",
            output.long,
            "--csv",
            output.csv,
            "--derived",
            output.metrics,
            MODE_ARGS,
            NCU_ARGS,
            "--chunk-size",
            config["ncu"]["chunk_size"],
            "--explain",
            config["ncu"]["explain"],
            "--explain-sections",
            config["ncu"]["explain_sections"],
        ),
    shell:
        "{params.cmd} --log {log:q}"
