"""Whether a run is alive in a working folder, so that the command that was interrupted
is also the one that goes on.

Snakemake locks a folder while it runs and leaves the lock behind when it is killed
outright; the next run then stops ("Directory cannot be locked") until ``--unlock``,
which is unsafe while a run still lives there. Here every process of a run (Snakemake's
main process and each stage) holds a shared lock on one file (``.snakemake/ncuflow/
run.lock``), which the system releases when the process ends, however it ends. A new run
that can take that lock alone knows that no process of an earlier run is alive: the
locks Snakemake left are stale, and it removes them, and any job file cut short, and
goes on.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .files import remove_cut_short
from .vocab import RUN_LOCK_ENV

_held: list[int] = []  # descriptors held until the process ends


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def claim_folder(lock: Path, snakemake_locks: Path, folder: Path) -> list[str]:
    """In Snakemake's main process, before it locks the folder: where no process of any
    run holds ``lock``, remove the locks a killed run left and its job files cut short
    under ``folder`` (files.remove_cut_short; never while a run may be writing them); then
    hold ``lock`` (shared) as this run's. What was done or found, as lines to print."""
    descriptor = _open(lock)
    said = []
    stale = sorted(snakemake_locks.glob("*.lock")) if snakemake_locks.is_dir() else []
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # a process of another run is alive: its locks stand
        if stale:
            said.append(
                f"ncuflow: another run is still working in this folder (a process of it holds "
                f"{lock}): let it end or stop it, then run this command again; --unlock would "
                "let two runs overwrite each other's files"
            )
    else:
        for path in stale:
            path.unlink(missing_ok=True)
        if stale:
            said.append("ncuflow: the lock an interrupted run left on this folder was removed "
                        "(no process of it is alive)")  # fmt: skip
        said += [f"ncuflow: {path} was cut short: removed, its job runs again"
                 for path in remove_cut_short(folder)]  # fmt: skip
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    _held.append(descriptor)
    return said


def hold_for_run() -> None:
    """In a stage: hold the run's lock (shared) until this process ends, where the run set
    one (its main process names it in the environment)."""
    named = os.environ.get(RUN_LOCK_ENV)
    if named and Path(named).is_file():
        descriptor = os.open(named, os.O_RDWR)
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        _held.append(descriptor)
