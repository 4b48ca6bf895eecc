"""The words every stage shares, each defined once: the version, configuration statuses,
the files between stages, NVTX range names, figure names, bound classes and how timing
was done. This module imports nothing, so any stage (and any notebook) may read it."""

from __future__ import annotations

VERSION = "0.1.0"

# ---- statuses of a configuration

# In a plan a configuration is pending (to be measured) or skipped (a restriction or a
# device limit failed); a measured one ends ok or with the error class that stopped it: a
# kernel that did not compile, launch or check, one that outlived its time limit (killed
# with its worker), and one whose profile ncu could not take (ncu's message in its error).
PENDING, SKIPPED = "pending", "skipped"
OK, WRONG_RESULT = "ok", "wrong_result"
COMPILE_ERROR, LAUNCH_ERROR = "compile_error", "launch_error"
TIMEOUT, PROFILE_ERROR = "timeout", "profile_error"
# The statuses a table may hold, in the order a run's last lines count them.
STATUSES = (OK, SKIPPED, WRONG_RESULT, COMPILE_ERROR, LAUNCH_ERROR, TIMEOUT, PROFILE_ERROR)
# Statuses of configurations that ran to the end: timed, and profiled where the variant is
# (a wrong result keeps its time and metrics, to show how it went wrong; it never wins).
TIMED = (OK, WRONG_RESULT)

# ---- a comparison's time verdicts (report.compare): B against A, beyond a least effect
# with 95 % confidence, within it, or too noisy to tell; HOST where a change is what the
# two hosts' clocks or measured ceilings make of it (report.hosts)

SAME, FASTER, SLOWER, AMBIGUOUS = "SAME", "FASTER", "SLOWER", "AMBIGUOUS"
HOST = "HOST"
VERDICTS = (FASTER, SLOWER, SAME, HOST, AMBIGUOUS)  # in the order compare.md counts them
MIN_EFFECT = 0.02  # a change in time below 2 % is called no change (compare --threshold)

# ---- the files between stages (results/<experiment>/<variant>/<part>/, and a capture's
# results/<experiment>/<variant>/ folders)

PLAN = "plan.json"  # what a job measures (plan.Plan)
MEASURE = "measure.json"  # its timing records, by configuration (plan.Record)
DEVICE = "device.json"  # the facts of the device a job, or the run, measured on
NCU_LONG = "ncu_long.parquet"  # every ncu value, exact: one row per kernel and metric
METRICS = "metrics.parquet"  # the registry's columns per configuration
PROFILE_ERRORS = "profile_errors.json"  # configurations ncu could not profile, and why
NCU_RAW = "ncu_raw.csv"  # ncu's own CSV export of the reports (raw page), for people
CHUNKS = "chunks"  # a profile job's ncu reports and values, each kept as it completes
FINDINGS = "findings.parquet"  # Nsight Compute's rule results, per kernel (profile.explain)
EXPLAIN_LONG = "explain_long.parquet"  # the explain and source tiers' ncu values, as NCU_LONG
SOURCE_LINES = "source_lines.parquet"  # the source tier's stall samples per source line
# What the profile stage writes beside NCU_LONG, kept in captures and replayed with it.
PROFILE_EXTRAS = (FINDINGS, EXPLAIN_LONG, SOURCE_LINES)
# What a profile job writes for each measure job it takes.
PROFILED = (NCU_RAW, NCU_LONG, METRICS, PROFILE_ERRORS, *PROFILE_EXTRAS)
# the profiling tiers, each with more sections than the one before (docs/methods.md)
SWEEP, EXPLAIN, SOURCE = "sweep", "explain", "source"
TABLE = "table.parquet"  # an experiment's table (and table.csv beside it)
CAPTURE_INFO = "capture.json"  # a capture's provenance: when, where, how
RUN = "run.json"  # how long a run took: in all, per stage, on how many cores and GPUs
# What results/ holds beside a folder per experiment, each name without its suffix: the
# device's files (device.json, .csv, .html), the devices rule's folder, the measured
# ceilings and energy ceilings, the logs of the run's own rules, RUN, where `ncuflow
# compare` writes by default (compare/) and the README's `snakemake --report`
# (report.html). No experiment may take one.
RESULTS_OWN = ("device", "devices", "ceilings", "energy_ceilings", "logs", "run", "report",
               "compare")  # fmt: skip
RUN_LOG_ENV = "NCUFLOW_RUN_LOG"  # where a run's stages append their wall times (runlog)
COMPILED_ENV = "NCUFLOW_COMPILED"  # the compile stage's index, for a stage's workers
CUBINS = ".snakemake/ncuflow/cubins"  # the compile stage's cache of cubins (compile.cubins)
RUN_LOCK_ENV = "NCUFLOW_RUN_LOCK"  # the file a live run's processes hold (runlock)
# the folder of this user's caches that outlive a working folder (files.user_cache);
# unset: $XDG_CACHE_HOME/ncuflow, else ~/.cache/ncuflow
USER_CACHE_ENV = "NCUFLOW_CACHE"
JOURNAL_SUFFIX = ".partial.jsonl"  # beside measure.json while a job measures

# ---- NVTX: the profile worker opens one range per configuration, named by this prefix
# and the configuration's target id; ncu keeps to those ranges and the names map kernels back.
# A target id names a configuration within a profile job, which may span several measure
# jobs: ``<variant>.<part>.<config_id>`` (variant and part names hold no dot).

NVTX_PREFIX = "ncuflow_"


def nvtx_name(target: str) -> str:
    return NVTX_PREFIX + target


def config_of_range(name: str) -> str | None:
    """The target id an NVTX range name belongs to, or None for a foreign range."""
    return name[len(NVTX_PREFIX) :] if name.startswith(NVTX_PREFIX) else None


def target_id(member: str, config_id: str) -> str:
    """A configuration's target id; ``member``: its measure job, ``<variant>.<part>``."""
    return f"{member}.{config_id}"


def split_target(target: str) -> tuple[str, str]:
    """(measure job, configuration id) of a target id."""
    variant, part, config = target.split(".", 2)
    return f"{variant}.{part}", config


# ---- figures every experiment gets; a family's own figures take other names

STANDARD_FIGURES = ("roofline", "performance", "sweep", "speed_of_light", "occupancy", "traffic")
SEARCH = "search"  # a search's folder of rounds, in results/<experiment>/ and a capture
SEARCH_FIGURE = "search_progress"  # a search's own: the best found against evaluations

# ---- what bounds a configuration (analyze.bound): a memory level, a compute roof, or
# neither near its ceiling

MEMORY, COMPUTE, LATENCY = "memory", "compute", "latency"
# within a few points of the latency line: both candidates are named in bound_level
BORDERLINE = "borderline"
# what held the GPU's clocks down while a configuration ran, where something did
# (analyze.energy.power_limited): its power limit, or its temperature
POWER, THERMAL = "power", "thermal"

# ---- the energy tier (measure.energy): its figure and table, where an experiment has it

ENERGY_FIGURE = "energy"
ENERGY_CEILINGS_JSON = "energy_ceilings.json"  # results/, rule energy_ceilings's
# the device's energy ceilings (device.ceilings), kept with its other measured ceilings
ENERGY_CEILING_NAMES = ("energy_fp32", "energy_tensor_fp16", "energy_dram")

# ---- how timing was done, recorded in every plan's timing so that a capture timed
# otherwise is told apart

# The L2 cache is emptied before each timed launch by a read of a buffer twice the size of
# L2, which leaves only clean lines; a memset (before 2026-11-24) left dirty lines that were
# written back during the timed launch and made some times bimodal.
L2_FLUSH_METHOD = "read 2x L2 (ld.global.cg)"
# A GPU variant's timed launches are enqueued behind a kernel that holds the stream until
# a batch is enqueued, so that no host delay falls inside a timed interval (before
# 2026-11-25 each launch ran as soon as the host enqueued it: a busy host spread three
# short launches of 0.09 ms with a CV of 3 %).
ENQUEUE_METHOD = "batches held behind a gate kernel until enqueued"
