# Stage 1 (GPU): compile, check against the reference, and time every configuration of one
# part of an (experiment, variant): configurations_per_job of them, so that a long sweep
# spreads over GPUs. The variant's plan (its grid as the config gave it, and where each part
# starts) is written once by the main process under .snakemake/ncuflow/plans/, named by a
# hash of its content: a change to the grid, the sizes, the timing or the kernel sources
# (through the family fingerprint) changes the name, so Snakemake measures and profiles
# again. The job expands its own part into plan.json, beside its records and the facts of
# the GPU it ran on (device.json). A variant timed by the host's clock holds every core, so
# that nothing runs beside it (on a cluster run without --cores, every core of this machine).
# The longest jobs go first (priority: expected GPU seconds).


rule measure:
    input:
        plan=lambda wc: STUDY.plan_file(wc.experiment, wc.variant),
    output:
        plan="results/{experiment}/{variant}/{part}/plan.json",
        measure="results/{experiment}/{variant}/{part}/measure.json",
        device="results/{experiment}/{variant}/{part}/device.json",
    log:
        "results/{experiment}/{variant}/{part}/logs/measure.log",
    priority: lambda wc: STUDY.priority(wc.experiment, wc.variant, wc.part)
    threads: lambda wc: STUDY.threads(wc.experiment, wc.variant, CORES)
    resources:
        gpu=lambda wc: STUDY.gpus(wc.experiment, wc.variant),
    params:
        cmd=lambda wc, input, output: command_line(
            "measure",
            ["--variant-plan", input.plan, "--part", wc.part, "--plan", output.plan],
            ["--out", output.measure],
            ["--device-out", output.device, MODE_ARGS],
        ),
    shell:
        "{params.cmd} --log {log:q}"
