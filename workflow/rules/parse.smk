# Stage 4: the ncu CSV as a long table (config_id, kernel, metric, unit, value) and as
# one row of derived quantities per configuration.


rule parse:
    input:
        "results/{experiment}/{variant}/ncu_raw.csv",
    output:
        long="results/{experiment}/{variant}/ncu_long.parquet",
        metrics="results/{experiment}/{variant}/metrics.parquet",
    log:
        "results/{experiment}/{variant}/logs/parse.log",
    shell:
        "{PY} -m ncuflow parse --csv {input} --long {output.long}"
        " --metrics {output.metrics} --log {log}"
