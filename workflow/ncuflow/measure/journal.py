"""The measuring journal: per-configuration events, appended as they happen.

The worker appends a ``start`` line before it touches a configuration and a ``done`` line
with its record after, each on disk before it goes on. An interrupted or crashed job
therefore loses nothing it measured: the next run reuses every ``done`` record whose
fingerprint still matches, and a ``start`` without a ``done`` names the configuration
that took the worker down. The stage and its worker also agree here on the worker's
command and the exit code of a lost CUDA context.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from ..files import append_line, atomic_write
from ..plan import Record

# The command of a worker (measure.worker), followed by its work list and the journal.
WORKER = (sys.executable, "-m", "ncuflow.measure.worker")
# The worker exits with this code after a fault that leaves the CUDA context unusable.
EXIT_CONTEXT_LOST = 3


def started(path: Path, config_id: str) -> None:
    append_line(path, {"event": "start", "config_id": config_id})


def finished(
    path: Path, config_id: str, record: Record, phases: dict[str, float] | None = None,
    notes: Iterable[str] = (),
) -> None:  # fmt: skip
    """A configuration's record, and where its time went (seconds per phase: drawing the
    inputs and the reference, building, checking, timing), where the worker kept it, with
    notes for the log (why its kernel was compiled in the job)."""
    entry = {"event": "done", "config_id": config_id, "record": record.to_json()}
    said = sorted(notes)
    append_line(path, {**entry, **({"phases": phases} if phases else {}),
                       **({"notes": said} if said else {})})  # fmt: skip


def running(path: Path) -> str | None:
    """The configuration a worker is on now: the last event of the file is its start (read
    from the file's end, so polling a long file stays cheap)."""
    if not path.exists():
        return None
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - 4096))
        lines = handle.read().decode(errors="replace").splitlines()
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        return entry["config_id"] if entry.get("event") == "start" else None
    return None


def phases(path: Path) -> tuple[dict[str, dict[str, float]], set[str]]:
    """Where each finished configuration's time went, by config_id (those that say), and
    the distinct notes of them all."""
    found: dict[str, dict[str, float]] = {}
    notes: set[str] = set()
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("event") == "done":
            if entry.get("phases"):
                found[entry["config_id"]] = entry["phases"]
            notes.update(entry.get("notes", ()))
    return found, notes


def read(path: Path) -> tuple[dict[str, Record], list[str]]:
    """(each config_id's last finished record, config_ids started and not finished since:
    a configuration started again for a later round of timing, after its first record,
    counts until that round's record)."""
    done: dict[str, Record] = {}
    begun: list[str] = []
    if not path.exists():
        return done, begun
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if entry.get("event") == "start":
            begun.append(entry["config_id"])
        elif entry.get("event") == "done":
            done[entry["config_id"]] = Record.from_json(entry["record"], f"{path}: a record")
            begun = [c for c in begun if c != entry["config_id"]]
    return done, begun


def rewrite(path: Path, records: dict[str, Record]) -> None:
    """The journal with only ``records`` (those of an earlier run that still match)."""
    lines = [json.dumps({"event": "done", "config_id": c, "record": r.to_json()})
             for c, r in records.items()]  # fmt: skip
    atomic_write(path, "".join(line + "\n" for line in lines))
