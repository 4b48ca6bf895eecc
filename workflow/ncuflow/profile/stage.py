"""The profile stage (rule ``profile``): every configuration of a part that ran to the
end profiled by ncu, ``chunk_size`` configurations per ncu process.

The profiled process is the profile worker (profile.worker), which launches each
configuration once inside an NVTX range named ``ncuflow_<config_id>``; ``--nvtx-include``
keeps ncu to those launches, and the range names map the report's rows back to
configurations. Each chunk's report and values are kept in profile_chunks/ as the chunk
completes, so that an interrupted run profiles again only what was missing.

Two tiers (docs/methods.md, "Two profiling tiers"): the explain tier profiles each size's
fastest configuration (or every one, or none: ``explain``) with ``explain_sections``
besides ``sections``, for stall reasons, per-line stall samples, sectors per request and
bank conflicts; the sweep profiles every other configuration with ``sections``. Each
configuration is profiled once: the explain tier's report holds every value the sweep's
would (its sections include the sweep's, with the same metrics), and a configuration the
explain tier could not profile goes to the sweep. Both keep ncu's rule results (findings).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import time
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
from ..vocab import (
    CHUNKS,
    EXPLAIN,
    EXPLAIN_LONG,
    FINDINGS,
    OK,
    PROFILE_ERRORS,
    SOURCE_LINES,
    SWEEP,
)
from .explain import FINDING_COLUMNS, LINE_COLUMNS, read_findings, read_source_lines
from .long_table import LONG_COLUMNS, read_report, write_long
from .worker import worker_command


def _chunk_key(
    ids: Sequence[str], measured: dict[str, Record], sections: Sequence[str] = ()
) -> str:
    """What a chunk profiled: its configurations, the records they were measured with, and
    the explain tier's sections where it is that tier's."""
    text = json.dumps([(c, measured[c].fingerprint) for c in ids] + list(sections))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ChunkProfiler(Protocol):
    """What profiles one chunk: ``target`` (the profile worker over ``chunk``) under ncu,
    killed after ``limit`` seconds, with the sections of ``tier``; its report into
    ``base``.ncu-rep, its values into ``base``.parquet and its raw CSV into ``base``.csv;
    the configurations it could not profile, with why."""

    def __call__(
        self, base: Path, chunk: list[str], target: list[str], limit: float, tier: str = SWEEP
    ) -> dict[str, str]: ...


class NcuProfiler:
    """The chunk profiler of a GPU run: one ncu process per chunk, asking for the
    registry's metrics (those this GPU has) besides the sections."""

    def __init__(self, settings: NcuSettings, log: Callable[[str], None]) -> None:
        self.settings, self.log = settings, log
        self.ncu = find_ncu(settings.path)
        self._metrics: list[str] | None = None

    def __call__(
        self, base: Path, chunk: list[str], target: list[str], limit: float, tier: str = SWEEP
    ) -> dict[str, str]:
        """One ncu process over the chunk. What an earlier run left of it goes first, so
        that a failure never brings back another set of configurations."""
        if self._metrics is None:
            wanted = [*required_metrics(), *self.settings.extra_metrics]
            self._metrics = available_metrics(self.ncu, wanted, self.log)
        for suffix in (".parquet", ".csv", ".ncu-rep", ".findings.parquet"):
            base.with_suffix(suffix).unlink(missing_ok=True)
        sections = self.settings.sections
        if tier == EXPLAIN:
            sections = tuple(dict.fromkeys([*sections, *self.settings.explain_sections]))
        command = ncu_command(self.ncu, base, sections, self.settings.clock_control,
                              self._metrics, target)  # fmt: skip
        self.log("$ " + " ".join(command))
        report = base.with_suffix(".ncu-rep")
        try:
            seconds = run_ncu(command, self.log, limit)
        except ProfileFailed as failure:
            self.log(str(failure))
            return {c: str(failure) for c in chunk}
        self.log(f"ncu took {seconds:.1f} s for {len(chunk)} configurations ({tier} tier)")
        started = time.perf_counter()
        write_long(read_report(report), base.with_suffix(".parquet"))
        export_csv(self.ncu, report, base.with_suffix(".csv"))
        self.log(f"its report read and exported in {time.perf_counter() - started:.1f} s")
        return {}


def explain_ids(mode: str, ids: Sequence[str], measured: dict[str, Record],
                job: Plan) -> list[str]:  # fmt: skip
    """The configurations of the explain tier: none, all, or the fastest of each size."""
    if mode == "none":
        return []
    if mode == "all":
        return list(ids)
    dims = {row.config_id: tuple(sorted(row.dims.items())) for row in job.configs}
    best: dict[tuple, str] = {}
    for config in (c for c in ids if measured[c].status == OK):  # a wrong result: never best
        time = measured[config].time_ms
        size = dims[config]
        if time is not None and (size not in best or time < measured[best[size]].time_ms):
            best[size] = config
    return [c for c in ids if c in best.values()]


def _profiled(
    base: Path, key: str, run: Callable[[], dict], log: Callable[[str], None], what: str
) -> dict[str, str]:
    """A chunk's errors: profiled now (``run``), or kept from an earlier run whose key is
    the same and which failed nowhere."""
    marker = base.with_suffix(".json")
    earlier = read_json(marker) if marker.is_file() else {}
    if earlier.get("key") != key or earlier.get("errors"):  # new, changed or failed
        failed = run()
        atomic_write(marker, json.dumps({"key": key, "errors": failed}))
    else:
        log(f"{what}: profiled by an earlier run, kept")
    return read_json(marker)["errors"]


def _frames(paths: Sequence[Path], columns: list[str]) -> pd.DataFrame:
    frames = [pd.read_parquet(p) for p in paths if p.is_file()]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


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
    process (``profiler``: NcuProfiler by default), then the explain tier's; write the exact
    long table of all of them, the raw CSV for people, the configurations ncu could not
    profile with ncu's message (profile_errors.json), and beside them the rule results
    (findings.parquet), the explain tier's values (explain_long.parquet) and its stall
    samples per source line (source_lines.parquet).

    Each chunk's report and long table are kept in profile_chunks/ as the chunk completes
    (the marker file last, written atomically): a run stopped at any point profiles again
    only the chunks that had not completed, and those ncu failed on."""
    profiler = profiler or NcuProfiler(settings, log)
    job = Plan.load(plan)
    kernels_dir = Path(job.kernels_dir)
    variant = load_variant(kernels_dir, job.family, job.variant)[1]
    measured = read_records(measure)
    ids = profiled_ids(measured, variant.profiled)
    rows = {row.config_id: row for row in job.configs}
    folder = long_path.parent / CHUNKS
    folder.mkdir(exist_ok=True)
    # the explain tier first: what it profiles, the sweep need not
    explained = explain_ids(settings.explain, ids, measured, job)
    failed = _explain_tier(profiler, long_path.parent, explained, (plan, measure, job),
                           settings.explain_sections, log)  # fmt: skip
    explained = [c for c in explained if c not in failed]
    # the sweep's chunks by position among every profiled configuration, without those the
    # explain tier profiled: which is fastest may change on a rerun without moving the rest
    windows = [ids[i : i + settings.chunk_size] for i in range(0, len(ids), settings.chunk_size)]
    swept = [c for c in ids if c not in explained]
    log(f"profiling {len(swept)} configurations in ncu processes of up to "
        f"{settings.chunk_size} (sweep tier)")  # fmt: skip
    bases, errors = [], {}
    for i, window in enumerate(windows):
        base, chunk = folder / f"chunk_{i:03d}", [c for c in window if c not in explained]
        if not chunk:
            _forget(base)
            continue

        def run(base: Path = base, chunk: list[str] = chunk) -> dict[str, str]:
            limit = chunk_limit(job.timing, [rows[c] for c in chunk])
            return profiler(base, chunk, worker_command(plan, measure, chunk), limit)

        key = _chunk_key(chunk, measured)
        errors.update(_profiled(base, key, run, log, f"chunk {i}"))
        bases.append(base)
    for stale in folder.glob("chunk_*.json"):  # of a larger sweep
        if int(stale.stem.split("_")[1]) >= len(windows):
            _forget(stale)
    reports = [*bases, *[folder / "explain"] * bool(explained)]
    long = _frames([b.with_suffix(".parquet") for b in reports], LONG_COLUMNS)
    write_long(long, long_path)
    if csv_path is not None:
        _join_csv([b.with_suffix(".csv") for b in reports], csv_path)
    atomic_write(long_path.with_name(PROFILE_ERRORS), json.dumps(errors, indent=1))
    # rule results last: reading them changes how ncu_report names derived metrics' units;
    # a chunk ncu failed on left no values, and its partial report is not read either
    tiers = [(b, SWEEP) for b in bases] + [(folder / "explain", EXPLAIN)] * bool(explained)
    started = time.perf_counter()
    findings = _frames([_findings(base, tier) for base, tier in tiers
                        if not read_json(base.with_suffix(".json")).get("errors")],
                       FINDING_COLUMNS)  # fmt: skip
    findings.to_parquet(long_path.with_name(FINDINGS), index=False)
    log(f"{len(long)} metric values of {long['config_id'].nunique()} configurations; "
        f"{len(errors)} could not be profiled; {len(findings)} findings, read in "
        f"{time.perf_counter() - started:.1f} s")  # fmt: skip


def _findings(base: Path, tier: str) -> Path:
    """The rule results of a chunk's report, beside it: read once per report (a resumed
    run keeps those of the chunks it kept)."""
    path, report = base.with_suffix(".findings.parquet"), base.with_suffix(".ncu-rep")
    fresh = path.is_file() and (
        not report.is_file() or path.stat().st_mtime >= report.stat().st_mtime)  # fmt: skip
    if not fresh:
        read_findings(report, tier).to_parquet(path, index=False)
    return path


def _explain_tier(
    profiler: ChunkProfiler, out: Path, ids: list[str], job_files: tuple[Path, Path, Plan],
    sections: Sequence[str], log: Callable[[str], None],
) -> dict[str, str]:  # fmt: skip
    """The explain tier's one ncu process over ``ids``: its values, findings and source
    lines beside the sweep's, in ``out`` (empty tables where it profiles nothing); the
    configurations it could not profile, with why."""
    plan, measure, job = job_files
    rows = {row.config_id: row for row in job.configs}
    base = out / CHUNKS / "explain"
    if ids:
        kernels_dir = Path(job.kernels_dir)

        def run() -> dict[str, str]:
            limit = chunk_limit(job.timing, [rows[c] for c in ids])
            failed = profiler(base, ids, worker_command(plan, measure, ids), limit, EXPLAIN)
            lines = base.with_suffix(".lines.parquet")
            lines.unlink(missing_ok=True)
            if not failed:
                own = kernels_dir / job.family / f"{job.variant}.cu"
                read_source_lines(base.with_suffix(".ncu-rep"), own, kernels_dir).to_parquet(
                    lines, index=False)  # fmt: skip
            return failed

        log(f"explain tier: {len(ids)} configurations ({', '.join(ids)})")
        key = _chunk_key(ids, read_records(measure), sections)
        failed = _profiled(base, key, run, log, "explain tier")
        for config, why in failed.items():  # the sweep profiles it; say what is missing
            log(f"explain tier: no profile of {config}, which the sweep profiles: {why}")
    else:
        failed = {}
        _forget(base)
    write_long(_frames([base.with_suffix(".parquet")], LONG_COLUMNS), out / EXPLAIN_LONG)
    _frames([base.with_suffix(".lines.parquet")], LINE_COLUMNS).to_parquet(
        out / SOURCE_LINES, index=False)  # fmt: skip
    return failed


def _forget(base: Path) -> None:
    """Remove what an earlier run left of a chunk (or of the explain tier)."""
    for suffix in (".json", ".parquet", ".csv", ".ncu-rep", ".findings.parquet", ".lines.parquet"):
        base.with_suffix(suffix).unlink(missing_ok=True)


def _join_csv(parts: Sequence[Path], out: Path) -> None:
    """The reports' raw CSV exports (a header row, ncu's units row, a row per kernel) as
    one file: every column of any of them, blank where a report has no such metric (the
    explain tier's has more than the sweep's)."""
    header: list[str] = []
    units: dict[str, str] = {}
    rows: list[dict[str, str]] = []
    for path in parts:
        lines = path.read_text().splitlines() if path.is_file() else []
        table = [row for row in csv.reader(lines) if row]
        if not table:
            continue
        names, body = table[0], table[1:]
        if body and not body[0][0]:  # the units row (its ID cell is empty)
            units.update({n: u for n, u in zip(names, body.pop(0), strict=False) if u})
        header += [n for n in names if n not in header]
        rows += [dict(zip(names, row, strict=False)) for row in body]
    text = io.StringIO()
    if header:
        writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(header)
        if units:
            writer.writerow([units.get(n, "") for n in header])
        writer.writerows([row.get(n, "") for n in header] for row in rows)
    atomic_write(out, text.getvalue())
