# Stage 2 (GPU): compile, check against the reference, and time every configuration.


rule measure:
    input:
        plan="results/{experiment}/{variant}/plan.json",
    output:
        "results/{experiment}/{variant}/measure.json",
    log:
        "results/{experiment}/{variant}/logs/measure.log",
    resources:
        gpu=1,
    params:
        cmd=lambda wc, input, output: command_line(
            "measure", "--plan", input.plan, "--out", output[0], MODE_ARGS
        ),
    shell:
        "{params.cmd} --log {log:q}"
