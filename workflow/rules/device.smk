# The device's facts (or the capture's, in replay) for figure titles and provenance.


rule device_facts:
    output:
        "results/device.json",
    log:
        "results/logs/device.log",
    params:
        source=MODE_ARGS,
    shell:
        "{PY} -m ncuflow device --out {output} {params.source} --log {log}"
