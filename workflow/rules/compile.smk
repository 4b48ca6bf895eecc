# Stage 0 (CPU): every CUDA configuration of an experiment's measure jobs compiled to a
# cubin with NVRTC, on every core but one (the GPU jobs of other experiments go on beside
# it) and no GPU, into .snakemake/ncuflow/cubins/, named by a hash of the source, what it
# includes, the options, the architecture (this machine's first GPU's) and NVRTC's
# version: only what the cache lacks is compiled, so a rerun after editing one kernel
# compiles only its configurations. The harness's own kernels (the check, the gate, the L2
# flush) are built with them. compiled.json maps each configuration's options to its
# cubin; the measure and profile jobs load those instead of compiling (without NVRTC's
# Python bindings or a GPU here, it is empty and they compile, as before).

COMPILE_CORES = max(1, min(CORES or os.cpu_count() or 1, os.cpu_count() or 1) - 1)


rule compile:
    input:
        plans=lambda wc: sorted(
            {plan for plan, _ in STUDY.compile_jobs(wc.experiment, wc.shard[1:])}
        ),
        # a search's round: its proposals, compiled when they are known (one job each)
        proposals=lambda wc: (
            STUDY.rounds(wc.experiment).proposals(wc.shard[1:]) if wc.shard else []
        ),
    output:
        "results/{experiment}/compiled{shard}.json",
    log:
        "results/{experiment}/logs/compile{shard}.log",
    wildcard_constraints:
        shard=r"(\.b[0-9]+)?",
    priority: lambda wc: STUDY.batch_priority(wc.experiment, wc.shard[1:] or None)
    threads: lambda wc: STUDY.rounds(wc.experiment).share(COMPILE_CORES, wc.shard)
    params:
        cmd=lambda wc, input, output, threads: command_line(
            "compile",
            [
                ["--job", *job]
                for job in STUDY.compile_jobs(wc.experiment, wc.shard[1:])
            ],
            ["--proposals", input.proposals] if input.proposals else [],
            ["--out", output[0], "--workers", threads],
            MODE_ARGS,
        ),
    shell:
        "{params.cmd} --log {log:q}"
