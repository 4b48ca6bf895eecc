"""The measure stage (rule ``measure``): the pending configurations of a batch's measure
jobs compiled, checked and timed by one worker process (measure.worker), restarted after a
crash and killed when a configuration outlives its time limit, until every one has a
record; then each job's measure.json.

Records of an earlier, interrupted run are reused where their fingerprint matches.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..children import spawn, stop
from ..errors import NcuflowError
from ..files import atomic_write
from ..limits import time_limit
from ..plan import ConfigRow, Job, Record, records_json, unfinished
from ..vocab import JOURNAL_SUFFIX, OK, target_id
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
    jobs: Sequence[Job],
    journal_path: Path,
    log: Callable[[str], None],
    worker: Sequence[str] = WORKER,
) -> None:
    """Run measure workers until every pending configuration of ``jobs`` (one measure job,
    or the several a batch takes) has a record; write each job's measure.json.

    One worker measures them all, one job after another (it starts once per batch, and
    again only after a crash or a kill); ``worker`` is its command (followed by the work
    list and the journal, ``journal_path``, which holds every record as it is made, under
    its target id: the next run reuses those whose fingerprint still matches)."""
    pending = {target_id(job.key, row.config_id): (job, row)
               for job in jobs for row in job.plan.pending}  # fmt: skip
    fingerprints = {t: job.plan.fingerprint(row) for t, (job, row) in pending.items()}
    earlier = journal.read(journal_path)[0]
    kept = {t: r for t, r in earlier.items() if fingerprints.get(t) == r.fingerprint}
    if len(kept) < len(earlier):
        log("records of an earlier run no longer match their configurations: measuring "
            "those anew")  # fmt: skip
        journal.rewrite(journal_path, kept)
    if kept:
        log(f"resuming: {len(kept)} of {len(pending)} configurations measured by an earlier run")
    worklist = journal_path.with_name(journal_path.name + ".work.json")
    atomic_write(worklist, json.dumps([{"member": job.key, "plan": str(job.plan_path)}
                                       for job in jobs], indent=1))  # fmt: skip
    command = [*worker, str(worklist), str(journal_path)]
    limits = {t: time_limit(job.plan.timing, row) for t, (job, row) in pending.items()}
    rounds = {t: job.plan.timing.round_count for t, (job, _) in pending.items()}
    done = kept
    while any(unfinished(done.get(t), rounds[t]) for t in pending):
        returncode, tail, killed = watch(command, journal_path, limits)
        after, crashed = journal.read(journal_path)
        if killed:  # in a later round: a timeout, its earlier rounds' times kept
            record = Record.timed_out(limits[killed], fingerprints[killed])
            if killed in after:
                record = after[killed].updated(status=record.status, error=record.error)
            journal.finished(journal_path, killed, record)
            log(f"{killed}: timeout after {limits[killed]:.0f} s")
        elif returncode in (0, EXIT_CONTEXT_LOST):
            if after == done:  # no record new or changed (a round added, a status)
                raise NcuflowError(f"the measuring worker made no progress:\n{tail}")
        elif crashed:
            # the configuration it was running took the process down: record it and go on
            # (in a later round of timing: a launch error, its earlier rounds' times kept)
            culprit = crashed[-1]
            record = Record.crashed(returncode, tail, fingerprints[culprit])
            if culprit in after:
                record = after[culprit].updated(status=record.status, error=record.error)
            journal.finished(journal_path, culprit, record)
        else:
            raise NcuflowError(f"the measuring worker failed before any kernel ran:\n{tail}")
        done = journal.read(journal_path)[0]
    _report(pending, done, *journal.phases(journal_path), log)
    for job in jobs:
        records = {row.config_id: done[target_id(job.key, row.config_id)]
                   for row in job.plan.pending}  # fmt: skip
        atomic_write(job.measure_path, records_json(records))
    journal_path.unlink()
    worklist.unlink()


def measure_plan(
    plan_path: Path, out_path: Path, log: Callable[[str], None], worker: Sequence[str] = WORKER
) -> None:
    """One plan measured alone, its journal beside ``out_path`` (the tests, the benchmarks)."""
    job = Job(plan_path, out_path, out_path.parent)
    measure_stage([job], out_path.with_name(out_path.name + JOURNAL_SUFFIX), log, worker)


def _report(
    pending: dict[str, tuple[Job, ConfigRow]],
    done: dict[str, Record],
    spent: dict[str, dict[str, float]],
    notes: set[str],
    log: Callable[[str], None],
) -> None:
    """One line per configuration (its status, its time or error, where the worker's time
    went), the totals and the notes (why a kernel was compiled in the job)."""
    for target in pending:
        rec = done[target]
        shown = f"{rec.time_ms:.4f} ms" if rec.status == OK else rec.error[:300]
        where = ", ".join(f"{k} {v:.2f} s" for k, v in spent.get(target, {}).items())
        log(f"{target}: {rec.status} {shown}" + (f" ({where})" if where else ""))
    totals: dict[str, float] = {}
    for phases in spent.values():
        for name, seconds in phases.items():
            totals[name] = totals.get(name, 0.0) + seconds
    if totals:
        log(
            "where the workers' time went: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in totals.items())
        )
    for note in sorted(notes):
        log(note)
