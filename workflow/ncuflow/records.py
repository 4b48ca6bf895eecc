"""Per-configuration measurement records, appended as they happen.

The GPU worker appends a ``start`` line before it touches a configuration and a ``done``
line with the result after, each flushed to disk at once. An interrupted or crashed job
therefore loses nothing it measured: the next run reuses every ``done`` record whose
fingerprint still matches, and a ``start`` without a ``done`` names the configuration
that took the worker down.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from . import __version__


def fingerprint(plan: dict[str, Any], row: dict[str, Any]) -> str:
    """What decides a measurement: kernel sources, the configuration (and the device facts
    its launch geometry follows), its dtype and scalars, timing and seed."""
    key = {
        "ncuflow": __version__,
        "family": plan["family_fingerprint"],
        "variant": plan["variant"],
        "config": {k: row.get(k) for k in ("config_id", "dims", "params", "dtype")},
        "scalars": plan.get("scalars"),
        "timing": plan["timing"],
        "seed": plan["seed"],
    }
    # only a row whose grid follows the device's facts has them (expand.py): the others
    # keep the fingerprints they had before grids could
    if "grid_facts" in row:
        key["grid_facts"] = row["grid_facts"]
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def atomic_write(path: Path, text: str) -> None:
    """Write a file so that no reader ever sees it half-written: a temporary file beside
    it, flushed to disk, then renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_if_changed(path: Path, text: str) -> Path:
    """Write ``text`` unless the file already holds it: a file whose time changes only
    with its content, for Snakemake to rerun what depends on it."""
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
    return path


def append(path: Path, entry: dict[str, Any]) -> None:
    with open(path, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


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


def read(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(finished records by config_id, config_ids started but never finished)."""
    done: dict[str, dict[str, Any]] = {}
    started: list[str] = []
    if not path.exists():
        return done, started
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if entry.get("event") == "start":
            started.append(entry["config_id"])
        elif entry.get("event") == "done":
            done[entry["config_id"]] = entry["record"]
    return done, [c for c in started if c not in done]
