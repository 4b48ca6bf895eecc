# Stage 1 (GPU): load (compile.smk; or compile), check against the reference, and time
# every configuration of the measure jobs a batch takes (b0, b1, ...: up to
# ncu.variants_per_job parts of an experiment's variants, each of at most configurations_per_job configurations, so that a
# long sweep spreads over GPUs; one measuring worker for them all). Each variant's plan
# (its grid as the config gave it, and where each part starts) is written once by the
# main process under .snakemake/ncuflow/plans/, named by a hash of its content: a change to
# the grid, the sizes, the timing or the kernel sources (through the family fingerprint)
# changes the name, so Snakemake measures and profiles again. The batch expands each part
# into plan.json, beside its records and the facts of the GPU it ran on (device.json),
# under measured/; every record goes into journal.jsonl as it is made, so that an
# interrupted run measures only what has none. A host variant (timed by the host's clock)
# is batched apart and holds every core, so that nothing runs beside it (on a cluster run
# without --cores, every core of this machine). The longest batches go first (priority:
# expected GPU seconds). Rule measured gives each measure job its files.


rule measure:
    input:
        plans=lambda wc: sorted(
            {
                STUDY.plan_file(wc.experiment, v)
                for v, _ in STUDY.batch_jobs(wc.experiment, wc.batch)
            }
        ),
        compiled=lambda wc: STUDY.compiled_file(wc.experiment, wc.batch),
        # a search's round: the configurations its batches measure (search.smk)
        proposals=lambda wc: STUDY.rounds(wc.experiment).proposals(wc.batch),
    output:
        directory("results/{experiment}/measure.{batch}/measured"),
    log:
        "results/{experiment}/measure.{batch}/logs/measure.log",
    priority: lambda wc: STUDY.batch_priority(wc.experiment, wc.batch)
    threads: lambda wc: STUDY.batch_threads(wc.experiment, wc.batch, CORES)
    resources:
        gpu=lambda wc: STUDY.batch_gpus(wc.experiment, wc.batch),
    params:
        cmd=lambda wc, input, output: command_line(
            "measure",
            [
                ["--job", STUDY.plan_file(wc.experiment, v), p]
                for v, p in STUDY.batch_jobs(wc.experiment, wc.batch)
            ],
            ["--out", output[0]],
            ["--journal", f"results/{wc.experiment}/measure.{wc.batch}/journal.jsonl"],
            ["--compiled", input.compiled] if input.compiled else [],
            ["--proposals", input.proposals] if input.proposals else [],
            MODE_ARGS,
        ),
    shell:
        "{params.cmd} --log {log:q}"


rule measured:
    input:
        lambda wc: "results/{}/measure.{}/measured".format(
            wc.experiment, STUDY.batch_of(wc.experiment, wc.variant, wc.part)
        ),
    output:
        plan="results/{experiment}/{variant}/{part}/plan.json",
        measure="results/{experiment}/{variant}/{part}/measure.json",
        device="results/{experiment}/{variant}/{part}/device.json",
    log:
        "results/{experiment}/{variant}/{part}/logs/measured.log",
    params:
        cmd=lambda wc, input, output: copy_command(
            f"{input[0]}/{wc.variant}/{wc.part}", output
        ),
    shell:
        "({params.cmd}) 2> {log:q}"
