# Stage 2 (GPU): ncu profiles every configuration that ran to the end, of the measure jobs
# of a batch (b0, b1, ...: as rule measure takes them; ncu and the profiled process start
# once per chunk, not once per variant), ncu.chunk_size
# per ncu process (each chunk kept in chunks/ as it completes, so an interrupted run
# profiles again only what was missing). Each measure job's files go to its folder under
# profiled/: every numeric value of the reports, at full precision, into ncu_long.parquet,
# and the registry's columns per configuration into metrics.parquet; what ncu could not
# profile, into profile_errors.json. Nsight Compute's rule results go into
# findings.parquet; the explain tier (ncu.explain: ncu.explain_sections besides the
# sweep's, over each size's fastest configuration) and the source tier (ncu.source:
# ncu.source_sections besides those, over the fastest at the size each variant takes
# longest) into explain_long.parquet and, per source line (source tier),
# source_lines.parquet. Rule profiled gives each measure job its files.


rule profile:
    input:
        plans=lambda wc: STUDY.profile_files(wc.experiment, wc.batch, PLAN),
        measures=lambda wc: STUDY.profile_files(wc.experiment, wc.batch, MEASURE),
        compiled=lambda wc: STUDY.compiled_file(wc.experiment),
    output:
        directory("results/{experiment}/profile.{batch}/profiled"),
    log:
        "results/{experiment}/profile.{batch}/logs/profile.log",
    priority: lambda wc: STUDY.batch_priority(wc.experiment, wc.batch)
    # the second core starts the next chunk's ncu process while one profiles (a replay
    # here has no ncu: one core)
    threads: 1 if replays_here(config) else 2
    resources:
        gpu=lambda wc: max(
            STUDY.gpus(wc.experiment, v)
            for v, _ in STUDY.profile_jobs(wc.experiment, wc.batch)
        ),
    params:
        cmd=lambda wc, input, output, threads: command_line(
            "profile",
            ["--profile", STUDY.profile_mode(wc.experiment)],
            ["--plans", input.plans, "--measures", input.measures],
            ["--out", output[0]],
            ["--chunks", f"results/{wc.experiment}/profile.{wc.batch}/{CHUNKS}"],
            MODE_ARGS,
            NCU_ARGS,
            ["--chunk-size", config["ncu"]["chunk_size"]],
            ["--explain", config["ncu"]["explain"]],
            ["--explain-sections", config["ncu"]["explain_sections"]],
            ["--source", config["ncu"]["source"]],
            ["--source-sections", config["ncu"]["source_sections"]],
            ["--threads", threads],
            ["--compiled", input.compiled] if input.compiled else [],
        ),
    shell:
        "{params.cmd} --log {log:q}"


rule profiled:
    input:
        lambda wc: "results/{}/profile.{}/profiled".format(
            wc.experiment, STUDY.profile_batch_of(wc.experiment, wc.variant, wc.part)
        ),
    output:
        [f"results/{{experiment}}/{{variant}}/{{part}}/{name}" for name in PROFILED],
    log:
        "results/{experiment}/{variant}/{part}/logs/profiled.log",
    params:
        cmd=lambda wc, input, output: copy_command(
            f"{input[0]}/{wc.variant}/{wc.part}", output
        ),
    shell:
        "({params.cmd}) 2> {log:q}"
