"""The profile stage (rule ``profile``): every configuration of a part that ran to the
end profiled by ncu, ``chunk_size`` configurations per ncu process.

The profiled process is the profile worker (profile.worker), which launches each
configuration once inside an NVTX range named ``ncuflow_<config_id>``; ``--nvtx-include``
keeps ncu to those launches, and the range names map the report's rows back to
configurations. Each chunk's report and values are kept in profile_chunks/ as the chunk
completes, so that an interrupted run profiles again only what was missing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import pandas as pd

from ..files import atomic_write, read_json
from ..limits import chunk_limit
from ..metrics import required_metrics
from ..ncu import (
    NcuSettings,
    ProfileFailed,
    available_metrics,
    export_csv,
    find_ncu,
    ncu_command,
    run_ncu,
)
from ..plan import Plan, Record, profiled_ids, read_records
from ..spec import load_variant
from ..vocab import CHUNKS, PROFILE_ERRORS
from .long_table import LONG_COLUMNS, read_report, write_long
from .worker import worker_command


def _chunk_key(ids: Sequence[str], measured: dict[str, Record]) -> str:
    """What a chunk profiled: its configurations and the records they were measured with."""
    text = json.dumps([(c, measured[c].fingerprint) for c in ids])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ChunkProfiler(Protocol):
    """What profiles one chunk: ``target`` (the profile worker over ``chunk``) under ncu,
    killed after ``limit`` seconds, its values into ``base``.parquet and its raw CSV into
    ``base``.csv; the configurations it could not profile, with why."""

    def __call__(
        self, base: Path, chunk: list[str], target: list[str], limit: float
    ) -> dict[str, str]: ...


class NcuProfiler:
    """The chunk profiler of a GPU run: one ncu process per chunk, asking for the
    registry's metrics (those this GPU has) besides the sections."""

    def __init__(self, settings: NcuSettings, log: Callable[[str], None]) -> None:
        self.settings, self.log = settings, log
        self.ncu = find_ncu(settings.path)
        self._metrics: list[str] | None = None

    def __call__(
        self, base: Path, chunk: list[str], target: list[str], limit: float
    ) -> dict[str, str]:
        """One ncu process over the chunk. What an earlier run left of it goes first, so
        that a failure never brings back another set of configurations."""
        if self._metrics is None:
            wanted = [*required_metrics(), *self.settings.extra_metrics]
            self._metrics = available_metrics(self.ncu, wanted, self.log)
        for suffix in (".parquet", ".csv", ".ncu-rep"):
            base.with_suffix(suffix).unlink(missing_ok=True)
        command = ncu_command(self.ncu, base, self.settings.sections, self.settings.clock_control,
                              self._metrics, target)  # fmt: skip
        self.log("$ " + " ".join(command))
        report = base.with_suffix(".ncu-rep")
        try:
            seconds = run_ncu(command, self.log, limit)
        except ProfileFailed as failure:
            self.log(str(failure))
            return {c: str(failure) for c in chunk}
        self.log(f"ncu took {seconds:.1f} s for {len(chunk)} configurations")
        write_long(read_report(report), base.with_suffix(".parquet"))
        export_csv(self.ncu, report, base.with_suffix(".csv"))
        return {}


def profile_stage(
    plan: Path,
    measure: Path,
    long_path: Path,
    csv_path: Path | None,
    settings: NcuSettings,
    log: Callable[[str], None],
    profiler: ChunkProfiler | None = None,
) -> None:
    """Profile every configuration that ran to the end, ``settings.chunk_size`` per ncu
    process (``profiler``: NcuProfiler by default); write the exact long table of all of
    them, the raw CSV for people, and the configurations ncu could not profile with ncu's
    message (profile_errors.json).

    Each chunk's report and long table are kept in profile_chunks/ as the chunk completes
    (the marker file last, written atomically): a run stopped at any point profiles again
    only the chunks that had not completed, and those ncu failed on."""
    profiler = profiler or NcuProfiler(settings, log)
    job = Plan.load(plan)
    variant = load_variant(Path(job.kernels_dir), job.family, job.variant)[1]
    measured = read_records(measure)
    ids = profiled_ids(measured, variant.profiled)
    rows = {row.config_id: row for row in job.configs}
    folder = long_path.parent / CHUNKS
    folder.mkdir(exist_ok=True)
    chunks = [ids[i : i + settings.chunk_size] for i in range(0, len(ids), settings.chunk_size)]
    log(f"profiling {len(ids)} configurations in {len(chunks)} ncu processes")
    parts, errors, csv_parts = [], {}, []
    for i, chunk in enumerate(chunks):
        base, key = folder / f"chunk_{i:03d}", _chunk_key(chunk, measured)
        marker = base.with_suffix(".json")
        earlier = read_json(marker) if marker.is_file() else {}
        if earlier.get("key") != key or earlier.get("errors"):  # new, changed or failed
            limit = chunk_limit(job.timing, [rows[c] for c in chunk])
            failed = profiler(base, chunk, worker_command(plan, measure, chunk), limit)
            atomic_write(marker, json.dumps({"key": key, "errors": failed}))
        else:
            log(f"chunk {i}: profiled by an earlier run, kept")
        errors.update(read_json(marker)["errors"])
        if base.with_suffix(".parquet").is_file():
            parts.append(pd.read_parquet(base.with_suffix(".parquet")))
            csv_parts.append(base.with_suffix(".csv"))
    long = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=LONG_COLUMNS)
    write_long(long, long_path)
    if csv_path is not None:
        _join_csv(csv_parts, csv_path)
    atomic_write(long_path.with_name(PROFILE_ERRORS), json.dumps(errors, indent=1))
    log(f"{len(long)} metric values of {long['config_id'].nunique()} configurations; "
        f"{len(errors)} could not be profiled")  # fmt: skip


def _join_csv(parts: Sequence[Path], out: Path) -> None:
    """The chunks' raw CSV exports as one file (one header)."""
    lines: list[str] = []
    for path in parts:
        if path.is_file():
            text = path.read_text().splitlines()
            lines += text if not lines else text[1:]
    atomic_write(out, "\n".join(lines) + ("\n" if lines else ""))
