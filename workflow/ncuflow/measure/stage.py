"""The measure stage (rule ``measure``): a plan's pending configurations compiled, checked
and timed by a worker process (measure.worker), restarted after a crash and killed when a
configuration outlives its time limit, until every one has a record; then measure.json.

Records of an earlier, interrupted run are reused where their fingerprint matches.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..children import spawn, stop
from ..errors import NcuflowError
from ..files import atomic_write
from ..limits import time_limit
from ..plan import Plan, Record, records_json
from ..vocab import JOURNAL_SUFFIX, OK
from . import journal
from .journal import EXIT_CONTEXT_LOST, WORKER

WATCH_S = 0.25  # how often the stage looks at what its worker is doing


def watch(
    command: Sequence[str], journal_path: Path, limits: dict[str, float]
) -> tuple[int, str, str]:
    """Run one worker and kill it (its whole process group) when the configuration it is
    on outlives its limit. (exit code, the tail of its stderr, the configuration killed
    for its time or '')."""
    with tempfile.TemporaryFile("w+") as stderr:
        proc = spawn(command, stdout=subprocess.DEVNULL, stderr=stderr)
        current, since, killed = None, time.monotonic(), ""
        try:
            while proc.poll() is None:
                time.sleep(WATCH_S)
                now, running = time.monotonic(), journal.running(journal_path)
                if running != current:
                    current, since = running, now
                elif current is not None and now - since > limits[current]:
                    stop(proc)
                    killed = current
        finally:  # interrupted too: the worker never outlives the stage
            stop(proc)
        stderr.seek(0)
        tail = "\n".join(stderr.read().strip().splitlines()[-15:])
    return proc.returncode, tail, killed


def measure_stage(
    plan_path: Path,
    out_path: Path,
    log: Callable[[str], None],
    worker: Sequence[str] = WORKER,
) -> None:
    """Run measure workers until every pending configuration has a record; write them all.

    ``worker`` is the command of the worker process (followed by plan and journal paths).
    """
    plan = Plan.load(plan_path)
    pending = {row.config_id: row for row in plan.pending}
    partial = out_path.with_name(out_path.name + JOURNAL_SUFFIX)
    done, _ = journal.read(partial)
    if any(rec.fingerprint != plan.fingerprint(pending[c]) for c, rec in done.items()
           if c in pending):  # fmt: skip
        log("records of an earlier run no longer match their configurations: measuring anew")
        partial.unlink()
    elif done:
        log(f"resuming: {len(done)} of {len(pending)} configurations measured by an earlier run")
    command = [*worker, str(plan_path), str(partial)]
    limits = {c: time_limit(plan.timing, row) for c, row in pending.items()}
    while not pending.keys() <= (done := journal.read(partial)[0]).keys():
        returncode, tail, killed = watch(command, partial, limits)
        after, crashed = journal.read(partial)
        if killed:
            record = Record.timed_out(limits[killed], plan.fingerprint(pending[killed]))
            journal.finished(partial, killed, record)
            log(f"{killed}: timeout after {limits[killed]:.0f} s")
        elif returncode in (0, EXIT_CONTEXT_LOST):
            if len(after) == len(done):
                raise NcuflowError(f"the measuring worker made no progress:\n{tail}")
        elif crashed:
            # the configuration it was running took the process down: record it and go on
            culprit = crashed[-1]
            record = Record.crashed(returncode, tail, plan.fingerprint(pending[culprit]))
            journal.finished(partial, culprit, record)
        else:
            raise NcuflowError(f"the measuring worker failed before any kernel ran:\n{tail}")
    spent = journal.phases(partial)
    for config_id in pending:
        rec = done[config_id]
        shown = f"{rec.time_ms:.4f} ms" if rec.status == OK else rec.error[:300]
        where = ", ".join(f"{k} {v:.2f} s" for k, v in spent.get(config_id, {}).items())
        log(f"{config_id}: {rec.status} {shown}" + (f" ({where})" if where else ""))
    totals: dict[str, float] = {}
    for phases in spent.values():
        for name, seconds in phases.items():
            totals[name] = totals.get(name, 0.0) + seconds
    if totals:
        log(
            "where the workers' time went: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in totals.items())
        )
    atomic_write(out_path, records_json({c: done[c] for c in pending}))
    partial.unlink()
