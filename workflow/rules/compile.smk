# Stage 0 (CPU): every CUDA configuration of an experiment's measure jobs compiled to a
# cubin with NVRTC, on every core but one (the GPU jobs of other experiments go on beside
# it) and no GPU, into .snakemake/ncuflow/cubins/, named by a hash of the source, what it
# includes, the options, the architecture (this machine's first GPU's) and NVRTC's
# version: only what the cache lacks is compiled, so a rerun after editing one kernel
# compiles only its configurations. The harness's own kernels (the check, the gate, the L2
# flush) are built with them. compiled.json maps each configuration's options to its
# cubin; the measure and profile jobs load those instead of compiling (without NVRTC's
# Python bindings or a GPU here, it is empty and they compile, as before).


rule compile:
    input:
        lambda wc: sorted(
            {
                STUDY.plan_file(wc.experiment, v)
                for v, _ in STUDY.batch_jobs(wc.experiment)
            }
        ),
    output:
        "results/{experiment}/compiled.json",
    log:
        "results/{experiment}/logs/compile.log",
    priority: lambda wc: STUDY.batch_priority(wc.experiment)
    threads: max(1, min(CORES or os.cpu_count() or 1, os.cpu_count() or 1) - 1)
    params:
        cmd=lambda wc, output, threads: command_line(
            "compile",
            [
                ["--job", STUDY.plan_file(wc.experiment, v), p]
                for v, p in STUDY.batch_jobs(wc.experiment)
            ],
            ["--out", output[0], "--workers", threads],
            MODE_ARGS,
        ),
    shell:
        "{params.cmd} --log {log:q}"
