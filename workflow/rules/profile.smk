# Stage 3 (GPU): ncu profiles every configuration that ran to the end, ncu.chunk_size per
# process (each chunk kept in profile_chunks/ as it completes, so an interrupted run
# profiles again only what was missing); every numeric value of the reports goes, at full
# precision, into ncu_long.parquet; what ncu could not profile, into profile_errors.json.


rule profile:
    input:
        plan="results/{experiment}/{variant}/plan.json",
        measure="results/{experiment}/{variant}/measure.json",
    output:
        **(
            {"csv": "results/{experiment}/{variant}/ncu_raw.csv"}
            if MODE == "gpu"
            else {}
        ),
        long="results/{experiment}/{variant}/ncu_long.parquet",
        errors="results/{experiment}/{variant}/profile_errors.json",
    log:
        "results/{experiment}/{variant}/logs/profile.log",
    resources:
        gpu=1,
    params:
        source=MODE_ARGS,
        sections=config["ncu"]["sections"],
        metrics=config["ncu"]["extra_metrics"],
        clock=config["ncu"]["clock_control"],
        chunk=config["ncu"]["chunk_size"],
    run:
        report = (
            ["--report", output.report, "--csv", output.csv]
            if MODE == "gpu"
            else []
        )
        stage(
            "profile",
            "--plan",
            input.plan,
            "--measure",
            input.measure,
            "--long",
            output.long,
            report,
            params.source,
            "--clock-control",
            params.clock,
            "--chunk-size",
            params.chunk,
            "--sections",
            params.sections,
            "--metrics",
            params.metrics,
            log=log[0],
        )
