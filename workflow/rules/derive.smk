# Stage 4: the registry's columns per configuration, from the exact long table of ncu values.


rule derive:
    input:
        "results/{experiment}/{variant}/ncu_long.parquet",
    output:
        "results/{experiment}/{variant}/metrics.parquet",
    log:
        "results/{experiment}/{variant}/logs/derive.log",
    params:
        cmd=lambda wc, input, output: command_line(
            "derive", "--long", input[0], "--metrics", output[0]
        ),
    shell:
        "{params.cmd} --log {log:q}"
