# ncuflow: verify, time and profile CUDA kernel variants under Nsight Compute.
# Thin on purpose: config, validation and mode here; one stage per rule file; the logic
# of every stage lives in the ncuflow package (workflow/ncuflow), in a folder named as its
# rule (docs/design.md).
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(
        None, [str(Path(workflow.basedir) / "workflow"), os.environ.get("PYTHONPATH")]
    )
)


from ncuflow.runlock import claim_folder
from ncuflow.runlog import finish_run, process_started
from ncuflow.vocab import RUN_LOCK_ENV, RUN_LOG_ENV

# When this run began, and where its stages append their wall times (results/run.json);
# the file every process of this run holds while it lives (a killed run's lock is removed
# by the next one only where none of them is left: ncuflow.runlock)
STARTED = process_started()
if workflow.is_main_process:
    _runs = Path(".snakemake/ncuflow/runs").resolve()
    _runs.mkdir(parents=True, exist_ok=True)
    os.environ[RUN_LOG_ENV] = str(_runs / f"{STARTED:.3f}.jsonl")
    os.environ[RUN_LOCK_ENV] = str(_runs.parent / "run.lock")
    # a killed run's lock, and a job's file cut short (a full disk, a copy stopped
    # half-way), removed where no process of a run is alive: made again in this run
    for _line in claim_folder(
        Path(os.environ[RUN_LOCK_ENV]), Path(".snakemake/locks"), Path(".")
    ):
        print(_line, file=sys.stderr)
else:
    os.environ.setdefault(RUN_LOG_ENV, "")
    os.environ.setdefault(RUN_LOCK_ENV, "")


# set just above, for the stages' own processes; declared, so that a job that runs elsewhere
# (a cluster node) gets them too
envvars:
    "PYTHONPATH",
    RUN_LOG_ENV,
    RUN_LOCK_ENV,


from ncuflow.capture.folder import capture_dir
from ncuflow.cli import command_line, copy_command
from ncuflow.console import quiet_scheduler
from ncuflow.capture.records import REPLAY_CHECKED, unreplayable
from ncuflow.device.mode import mode_line, replays_here
from ncuflow.errors import NcuflowError
from ncuflow.files import local_path, read_config, write_if_changed
from ncuflow.study.checks import coerce_overrides, study_energy_seconds
from ncuflow.study.config import load_study
from ncuflow.study.questions import questions_json
from ncuflow.vocab import (
    CHUNKS,
    ENERGY_FIGURE,
    MEASURE,
    NCU_LONG,
    PLAN,
    PROFILE_ERRORS,
    PROFILE_EXTRAS,
    PROFILED,
    SEARCH_FIGURE,
    STANDARD_FIGURES,
)

# The workflow's own config.yaml is the default study; a --configfile on the command line
# replaces it, and paths in a config file are relative to that file.
WORKFLOW = Path(workflow.basedir)
CONFIGFILES = [Path(p) for p in workflow.config_settings.configfiles] or [
    WORKFLOW / "config.yaml"
]
try:
    # each config file read as ncuflow reads it: keys written twice, which the YAML reader
    # would drop in silence, and (before Snakemake reads the workflow's own, just below)
    # what Snakemake would answer with a traceback or without the line: a byte that is not
    # UTF-8, a tab in the indentation, an alias without its anchor, nesting thousands deep
    for _path in CONFIGFILES:
        read_config(_path)
except NcuflowError as exc:
    sys.exit(f"ncuflow: {exc}")
if not workflow.config_settings.configfiles:

    configfile: WORKFLOW / "config.yaml"


try:
    # --config values that Snakemake leaves as text, read as what the schema wants
    coerce_overrides(config, workflow.config_settings.config)
    STUDY = load_study(config, root=CONFIGFILES[-1].resolve().parent)
    CAPTURE = WORKFLOW / "resources" / "captures" / config["capture"]
    if config["mode"] == "replay":  # every job will replay: the capture must be there
        capture_dir(WORKFLOW, config["capture"])
except NcuflowError as exc:
    sys.exit(f"ncuflow: {exc}")
if config["mode"] == "check":  # ncuflow check, here and now: no job, nothing measured
    from ncuflow.check.variants import print_check

    _wrong = print_check(STUDY, workers=workflow.resource_settings.cores)
    sys.exit(f"ncuflow: check: {_wrong} variant(s) are wrong (above)" if _wrong else 0)

# Arguments every GPU stage takes. Each job decides gpu or replay by what its machine has
# (mode: auto), so the DAG is the same everywhere; every word of a stage's command line is
# quoted (ncuflow.cli.command_line): no value of the config is shell syntax.
MODE_ARGS = ["--mode", config["mode"], "--ncu", config["ncu"]["path"]]
MODE_ARGS += ["--capture", str(local_path(CAPTURE))]
# What ncu is asked for: the profile stage's settings, which a replay's collect compares
# with those the capture recorded.
# The energy tier's seconds, where any experiment has it: the device's energy ceilings
# are then measured too (rule energy_ceilings), apart from its rate ceilings.
ENERGY_S = study_energy_seconds(config)
NCU_ARGS = ["--clock-control", config["ncu"]["clock_control"]]
NCU_ARGS += ["--sections", config["ncu"]["sections"]]
NCU_ARGS += ["--metrics", config["ncu"]["extra_metrics"]]
# Where the numbers come from, as a file that changes only when that does: the device's
# facts and ceilings depend on it, so switching captures (or mode) redoes them.
SOURCE = str(
    write_if_changed(Path(".snakemake/ncuflow/source.json"), json.dumps(MODE_ARGS))
)
if workflow.is_main_process:  # not again in the processes that run jobs
    try:  # a capture's provenance that cannot be read: one line, no traceback
        _searches = any(e.search.searches for e in STUDY.experiments.values())
        print(mode_line(config, CAPTURE, STUDY.count(), _searches), file=sys.stderr)
        # what a replay here would lack, named before any job starts (a study small
        # enough to expand here; a larger one's jobs name it)
        if replays_here(config) and STUDY.count()[1] <= REPLAY_CHECKED:
            _lacking = unreplayable(  # a search's configurations are known as it goes
                CAPTURE,
                (
                    STUDY.plan(*job)
                    for job in STUDY.jobs()
                    if not STUDY.experiments[job[0]].search.searches
                ),
            )
            if _lacking:
                raise NcuflowError(_lacking)
    except NcuflowError as exc:
        sys.exit(f"ncuflow: {exc}")
    quiet_scheduler()
# --cores, or None (a cluster run without it: workflow.cores would stop the run)
CORES = workflow.resource_settings.cores
START_S = time.time() - STARTED  # Snakemake's start and the study's planning


report: WORKFLOW / "workflow" / "report" / "workflow.rst"


onsuccess:
    finish_run(workflow, config["mode"], STARTED, START_S, ok=True)
    from ncuflow.analyze.collect import status_line

    for _name in STUDY.experiments:
        _table = Path(f"results/{_name}/table.parquet")
        if _table.is_file():
            print(status_line(_table), file=sys.stderr)


onerror:
    finish_run(workflow, config["mode"], STARTED, START_S, ok=False)


# On a cluster (profiles/slurm) these run on the submitting machine; the GPU stages are jobs.
localrules:
    all,
    search,
    collect,
    plot,
    family_figure,
    search_figure,
    energy_figure,
    summary,
    device_table,
    devices,
    measured,
    profiled,


wildcard_constraints:
    experiment="[A-Za-z0-9_-]+",
    variant="[A-Za-z0-9_-]+",
    part="p[0-9]+",
    batch="b[0-9]+",


include: "workflow/rules/search.smk"
include: "workflow/rules/compile.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/profile.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/plot.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/device.smk"


rule all:
    default_target: True
    input:
        "results/device.json",
        "results/device.csv",
        "results/devices",
        expand("results/{experiment}/summary.csv", experiment=STUDY.experiments),
        expand("results/{experiment}/table.parquet", experiment=STUDY.experiments),
        [
            f"results/{experiment}/{figure}.{ext}"
            for experiment in STUDY.experiments
            for figure in STUDY.figures(experiment)
            for ext in ("png", "svg")
        ],
