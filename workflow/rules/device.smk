# The device's facts (or the capture's, in replay) for figure titles and provenance, and
# its measured ceilings: run once per device, read by the bound rule and the rooflines.


rule ceilings:
    input:
        SOURCE,
    output:
        "results/ceilings.json",
    log:
        "results/logs/ceilings.log",
    resources:
        gpu=1,
    params:
        cmd=lambda wc, output: command_line("ceilings", "--out", output[0], MODE_ARGS),
    shell:
        "{params.cmd} --log {log:q}"


# The energy tier's ceilings (an FP32 FMA loop, cuBLAS FP16, DRAM streams run back to
# back), for a study with energy: a rule of their own, so that turning the tier on or off
# leaves the rate ceilings, and the searches and verdicts that read them, as they were.
rule energy_ceilings:
    input:
        SOURCE,
    output:
        "results/energy_ceilings.json",
    log:
        "results/logs/energy_ceilings.log",
    resources:
        gpu=1,
    params:
        cmd=lambda wc, output: command_line(
            "energy-ceilings", "--out", output[0], "--seconds", ENERGY_S, MODE_ARGS
        ),
    shell:
        "{params.cmd} --log {log:q}"


rule device_facts:
    input:
        ceilings="results/ceilings.json",
        energy=["results/energy_ceilings.json"] if ENERGY_S else [],
        source=SOURCE,
    output:
        "results/device.json",
    log:
        "results/logs/device.log",
    resources:
        gpu=1,  # the facts of the GPU the jobs run on, where they run
    params:
        cmd=lambda wc, input, output: command_line(
            "device-facts",
            ["--out", output[0], "--ceilings", input.ceilings, MODE_ARGS],
            ["--energy-ceilings", input.energy] if input.energy else [],
        ),
    shell:
        "{params.cmd} --log {log:q}"


rule device_table:
    input:
        "results/device.json",
    output:
        csv="results/device.csv",
        html=report(
            "results/device.html",
            caption="../report/device.rst",
            category="device and provenance",
            labels={"table": "device facts"},
        ),
    log:
        "results/logs/device_table.log",
    params:
        cmd=lambda wc, input, output: command_line(
            "device-table", "--device", input[0], "--out", output.csv
        ),
    shell:
        "{params.cmd} --log {log:q}"


rule devices:
    input:
        lambda wc: [
            path
            for experiment in STUDY.experiments
            for path in STUDY.collect_inputs(experiment, "device.json")
        ],
    output:
        directory("results/devices"),
    log:
        "results/logs/devices.log",
    params:
        cmd=lambda wc, input, output: command_line(
            "devices", "--out-dir", output[0], list(input)
        ),
    shell:
        "{params.cmd} --log {log:q}"
