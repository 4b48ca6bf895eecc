"""The words every stage shares: configuration statuses, NVTX range names, and which
configurations a plan measures and profiles. CPU stages import these from here rather
than from the GPU harness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .spec import Family, Variant, load_family

# A configuration in a plan is pending (to be measured) or skipped (a restriction or a
# device limit failed); a measured one ends ok or with the error class that stopped it.
PENDING, SKIPPED = "pending", "skipped"
OK, COMPILE_ERROR, LAUNCH_ERROR, WRONG_RESULT = (
    "ok",
    "compile_error",
    "launch_error",
    "wrong_result",
)
# A configuration that outlived its time limit (killed with its worker), and one whose
# profile ncu could not take (ncu's own message in its error).
TIMEOUT, PROFILE_ERROR = "timeout", "profile_error"
# Beside a variant's ncu_long.parquet: the configurations ncu could not profile, and why.
PROFILE_ERRORS = "profile_errors.json"

# How the L2 cache is emptied before each timed launch (timing.flush_l2), recorded in every
# plan's timing so that a capture timed otherwise is told apart: a read of a buffer twice
# the size of L2 leaves only clean lines, where a memset (before 2026-11-24) left dirty
# lines that were written back during the timed launch and made some times bimodal.
L2_FLUSH_METHOD = "read 2x L2 (ld.global.cg)"
# How a GPU variant's timed launches are enqueued, recorded beside it: behind a kernel that
# holds the stream until a batch is enqueued, so that no host delay falls inside a timed
# interval (before 2026-11-25 each launch ran as soon as the host enqueued it: a busy host
# spread three short launches of 0.09 ms with a CV of 3 %).
ENQUEUE_METHOD = "batches held behind a gate kernel until enqueued"

# The profile worker opens one NVTX range per configuration, named by this prefix and the
# configuration's id; ncu keeps to those ranges and the names map kernels back.
NVTX_PREFIX = "ncuflow_"


def nvtx_name(config_id: str) -> str:
    return NVTX_PREFIX + config_id


def config_of_range(name: str) -> str | None:
    """The configuration an NVTX range name belongs to, or None for a foreign range."""
    return name[len(NVTX_PREFIX) :] if name.startswith(NVTX_PREFIX) else None


def plan_variant(plan: dict[str, Any]) -> tuple[Family, Variant]:
    """The family and variant a plan measures."""
    family = load_family(Path(plan["kernels_dir"]), plan["family"])
    return family, family.variants[plan["variant"]]


# Statuses of configurations that ran to the end: timed, and profiled where the variant is.
TIMED = (OK, WRONG_RESULT)


def profiled_ids(variant: Variant, measured: dict[str, dict[str, Any]]) -> list[str]:
    """The configurations ncu profiles: those that ran to the end (a wrong result keeps its
    time and metrics, to show how it went wrong), of a variant ncu profiles."""
    if not variant.profiled:
        return []
    return [config_id for config_id, rec in measured.items() if rec["status"] in TIMED]
