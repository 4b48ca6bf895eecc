"""The profile stage (rule ``profile``): every configuration that ran to the end, of the
measure jobs one profile job takes (profile.members), profiled by ncu, ``chunk_size``
configurations per ncu process.

The profiled process is the profile worker (profile.worker), which launches each
configuration once inside an NVTX range named ``ncuflow_<variant>.<part>.<config_id>``;
``--nvtx-include`` keeps ncu to those launches, and the range names map the report's rows
back to their job and configuration. Each chunk's report and values are kept in the job's
chunks folder as the chunk completes, so that an interrupted run profiles again only what
was missing.

Three tiers (docs/methods.md, "Profiling tiers"), each with more sections than the one
before: the source tier profiles each variant's fastest configuration at the size where
that takes least time (or longest, each size's fastest, every one, or none: ``source``)
with ``explain_sections`` and ``source_sections`` besides ``sections``, for per-line stall
samples, sectors per request and bank conflicts; the explain tier each size's other
fastest configurations (or every one, or none: ``explain``) with ``explain_sections``, for
stall reasons; the sweep every other configuration with ``sections``. Each configuration
is profiled once: a deeper tier's report holds every value the sweep's would, and a
configuration a deeper tier could not profile goes to the sweep. All keep ncu's rule
results (findings). A finished chunk's report is read and exported while ncu profiles the
next one.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import pandas as pd

from ..children import stop_children
from ..files import atomic_write, read_json
from ..limits import chunk_limit
from ..metrics import TENSOR, required_metrics, tensor_counters
from ..ncu import (
    NcuSettings,
    ProfileFailed,
    available_metrics,
    export_csv,
    find_ncu,
    ncu_command,
    run_ncu,
)
from ..plan import profile_choice
from ..vocab import (
    EXPLAIN,
    EXPLAIN_LONG,
    FINDINGS,
    NCU_LONG,
    NCU_RAW,
    PROFILE_ERRORS,
    SOURCE,
    SOURCE_LINES,
    SWEEP,
    split_target,
    target_id,
)
from .explain import FINDING_COLUMNS, LINE_COLUMNS, read_findings, read_source_lines
from .long_table import LONG_COLUMNS, read_report, write_long
from .members import Batch, Member, split_csv, timed_targets, worker_for
from .worker import wait_for


class ChunkProfiler(Protocol):
    """What profiles one chunk: ``target`` (the profile worker over ``chunk``) under ncu,
    killed after ``limit`` seconds (counted from when the file ``after`` appears, where it
    names the gate its worker waits for), with the sections of ``tier`` and the FLOP counters of
    the tensor-core precisions in ``tensor``; its report into ``base``.ncu-rep, its values
    into ``base``.parquet and its raw CSV into ``base``.csv (by the time its ``finish``,
    where it has one, has run); the configurations it could not profile, with why."""

    def __call__(
        self, base: Path, chunk: list[str], target: list[str], limit: float, tier: str = SWEEP,
        tensor: tuple[str, ...] = TENSOR, after: Path | None = None,
    ) -> dict[str, str]: ...  # fmt: skip


class NcuProfiler:
    """The chunk profiler of a GPU run: one ncu process per chunk, asking for the
    registry's metrics (those this GPU has) besides the sections; ``finish`` reads and
    exports its report, which the stage does while ncu profiles the next chunk."""

    def __init__(self, settings: NcuSettings, log: Callable[[str], None]) -> None:
        self.settings, self.log = settings, log
        self.ncu = find_ncu(settings.path)
        self._metrics: dict[tuple[str, ...], list[str]] = {}
        self._asking = threading.Lock()  # two chunks' threads ask ncu for them once

    def __call__(
        self, base: Path, chunk: list[str], target: list[str], limit: float, tier: str = SWEEP,
        tensor: tuple[str, ...] = TENSOR, after: Path | None = None,
    ) -> dict[str, str]:  # fmt: skip
        """One ncu process over the chunk. What an earlier run left of it goes first, so
        that a failure never brings back another set of configurations."""
        with self._asking:
            if tensor not in self._metrics:
                wanted = [*required_metrics(tensor), *self.settings.extra_metrics]
                self._metrics[tensor] = available_metrics(self.ncu, wanted, self.log)
        for suffix in (".parquet", ".csv", ".ncu-rep", ".findings.parquet"):
            base.with_suffix(suffix).unlink(missing_ok=True)
        command = ncu_command(self.ncu, base, tier_sections(self.settings, tier),
                              self.settings.clock_control, self._metrics[tensor],
                              target)  # fmt: skip
        self.log("$ " + " ".join(command))
        try:
            seconds = run_ncu(command, self.log, limit, after)
        except ProfileFailed as failure:
            self.log(str(failure))
            return {c: str(failure) for c in chunk}
        self.log(f"ncu took {seconds:.1f} s for {len(chunk)} configurations ({tier} tier)")
        return {}

    def finish(self, base: Path) -> None:
        """A profiled chunk's values and raw CSV, from its report."""
        started = time.perf_counter()
        report = base.with_suffix(".ncu-rep")
        exported = export_csv(self.ncu, report, base.with_suffix(".csv"))
        try:
            write_long(read_report(report), base.with_suffix(".parquet"))
        finally:  # the export ends, and its temporary file goes, whatever the reading did
            exported()
        self.log(f"{base.name}: its report read and exported in "
                 f"{time.perf_counter() - started:.1f} s")  # fmt: skip


def tier_sections(settings: NcuSettings, tier: str) -> tuple[str, ...]:
    """The sections a tier collects: the sweep's, and the deeper tiers' besides."""
    extra = {SWEEP: (), EXPLAIN: settings.explain_sections,
             SOURCE: (*settings.explain_sections, *settings.source_sections)}[tier]  # fmt: skip
    return tuple(dict.fromkeys([*settings.sections, *extra]))


def tier_ids(mode: str, batch: Batch) -> list[str]:
    """The targets of a deeper tier: none, all, the fastest of each variant at each size
    (best; over all its members: a variant's parts, a search's rounds), or of the size
    where that takes least time (shortest) or longest (longest)."""
    if mode == "none":
        return []
    every = [target_id(m.key, c) for m in batch.members for c in m.ids]
    if mode == "all":
        return every
    timed = timed_targets(batch.members)
    chosen = profile_choice("best", timed) or set()
    if mode in ("shortest", "longest"):
        pick = min if mode == "shortest" else max
        per_variant: dict[str, tuple[float, str]] = {}
        for (variant, _), target, time_ms in timed:
            if target in chosen:
                per_variant[variant] = pick(per_variant.get(variant, (time_ms, target)),
                                            (time_ms, target))  # fmt: skip
        chosen = {target for _, target in per_variant.values()}
    return [t for t in every if t in chosen]


def windows(batch: Batch, targets: Sequence[str], size: int) -> list[list[str]]:
    """``targets`` in chunks of up to ``size``, those of variants whose FLOPs ncu counts in
    the same tensor-core precisions (Member.tensor) next to each other: a chunk asks ncu
    for its variants' counters alone, so a chunk without tensor-core variants saves their
    replay passes, and no chunk more is started than ``size`` alone asks for."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for target in targets:
        groups.setdefault(batch.member(target)[0].tensor, []).append(target)
    ordered = [target for group in groups.values() for target in group]
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def _frames(paths: Sequence[Path], columns: list[str]) -> pd.DataFrame:
    return _concat([pd.read_parquet(p) for p in paths if p.is_file()], columns)


def _concat(frames: Sequence[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    kept = [f for f in frames if not f.empty]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=columns)


class _Tiers:
    """One profile job's chunks: each tier's windows of targets, profiled (or kept from an
    earlier run) one ncu process each, in ``folder``; a chunk's report read while the next
    one is profiled, its marker written last. With ``settings.processes`` above 1, a
    chunk's ncu process starts while the one before it profiles: its worker waits for the
    other's to end (a gate file, profile.worker) before it touches the GPU."""

    def __init__(self, batch: Batch, folder: Path, settings: NcuSettings,
                 profiler: ChunkProfiler, log: Callable[[str], None]) -> None:  # fmt: skip
        self.batch, self.folder, self.settings = batch, folder, settings
        self.profiler, self.log = profiler, log
        # this run's chunks: their tier, key and outcome (the configurations that failed)
        self.runs: dict[Path, tuple[str, str, Future[dict[str, str]] | None]] = {}
        self.running = ThreadPoolExecutor(max_workers=max(1, settings.processes))
        self.reading = ThreadPoolExecutor(max_workers=1)
        self.read: list[Future[None]] = []
        self.gate: Path | None = None  # the gate of the last chunk started
        # chunks whose thread runs (one may not be in runs yet: Ctrl-C), and whether the
        # stage stops (then no other starts)
        self.active, self.stopping = 0, False
        self.counting = threading.Lock()

    def profile(self, tier: str, windows: list[list[str]], skip: Iterable[str] = ()) -> None:
        """Every window of ``tier`` without the targets in ``skip``, started in order (a
        chunk this run already profiled with the same key is not profiled again); what an
        earlier run left of windows beyond these goes."""
        skipped, prefix = set(skip), f"{tier}_"
        for i, window in enumerate(windows):
            base, chunk = self.folder / f"{prefix}{i:03d}", [t for t in window if t not in skipped]
            if not chunk:
                self._drop(base)
                continue
            self._chunk(base, chunk, tier, f"{tier} chunk {i}")
        for stale in self.folder.glob(f"{prefix}*.json"):  # of a larger sweep
            index = re.fullmatch(rf"{prefix}(\d+)\.json", stale.name)
            if index and int(index.group(1)) >= len(windows):
                self._drop(stale.with_suffix(""))

    def failed(self) -> dict[str, dict[str, str]]:
        """Once every chunk started has ended and been read: per tier, the configurations
        it could not profile, with why."""
        failed: dict[str, dict[str, str]] = {SOURCE: {}, EXPLAIN: {}, SWEEP: {}}
        for tier, _, outcome in self.runs.values():
            if outcome is not None:
                failed[tier].update(outcome.result())
        for read in self.read:  # a chunk profiled again must not be written while read
            read.result()
        self.gate = None  # nothing runs on the GPU: the next need not wait
        return failed

    def done(self) -> list[tuple[Path, str]]:
        """Each chunk profiled without a failure (now or by an earlier run), and its tier."""
        return [(base, tier) for base, (tier, _, outcome) in self.runs.items()
                if outcome is None or not outcome.result()]  # fmt: skip

    def stop(self) -> None:
        """No chunk more started, those running killed with their ncu (the way out)."""
        with self.counting:
            self.stopping = True
        self.running.shutdown(wait=False, cancel_futures=True)
        while self.active:  # one may have spawned ncu meanwhile
            stop_children()
            time.sleep(0.05)

    def wait(self) -> None:
        """Every chunk's report read (an error in reading one raised here)."""
        self.running.shutdown()
        for future in self.read:
            future.result()
        self.reading.shutdown()
        for gate in self.folder.glob("*.gate"):
            gate.unlink(missing_ok=True)

    def _drop(self, base: Path) -> None:
        self.runs.pop(base, None)
        _forget(base)

    def _chunk(self, base: Path, chunk: list[str], tier: str, what: str) -> None:
        """A chunk profiled now, or kept from an earlier run whose key is the same and
        which failed nowhere (or from this run, failed or not)."""
        sections = tier_sections(self.settings, tier) if tier != SWEEP else ()
        text = json.dumps([(t, self.batch.fingerprint(t)) for t in chunk] + list(sections))
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        if base in self.runs and self.runs[base][1] == key:
            return
        marker = base.with_suffix(".json")
        earlier = read_json(marker) if marker.is_file() else {}
        if earlier.get("key") == key and not earlier.get("errors"):
            self.log(f"{what}: profiled by an earlier run, kept")
            self.runs[base] = (tier, key, None)
            return
        for suffix in (".json", ".lines.parquet", ".findings.parquet", ".gate"):
            base.with_suffix(suffix).unlink(missing_ok=True)  # of its last profile
        member = self.batch.member(chunk[0])[0]
        limit = chunk_limit(member.plan.timing, [self.batch.row(t) for t in chunk])
        after, gate = None, None
        if self.settings.processes > 1:
            gate = base.with_suffix(".gate")
            after, self.gate = self.gate, gate
        worker = worker_for(self.batch, chunk, base.with_suffix(".work.json"), after, gate)
        needed = tensor_counters({p for t in chunk for p in self.batch.member(t)[0].tensor})

        def profile() -> dict[str, str]:
            with self.counting:
                if self.stopping:  # its gate opened all the same: one after it may wait
                    if gate is not None:
                        gate.touch()
                    return {c: "the profile stage stopped first" for c in chunk}
                self.active += 1
            try:  # its time limit counts from when the one before it is done
                failed = self.profiler(base, chunk, worker, limit, tier, needed, after)
            finally:  # whatever became of its worker, the next one's may go on once the
                if gate is not None:  # one before it has ended too
                    if after is not None:
                        wait_for(after)
                    gate.touch()
                with self.counting:
                    self.active -= 1
            if failed:
                atomic_write(marker, json.dumps({"key": key, "errors": failed}))
                if tier != SWEEP:  # the sweep profiles it; say what is missing
                    for target, why in failed.items():
                        self.log(f"{tier} tier: no profile of {target}, which a shallower "
                                 f"tier profiles: {why}")  # fmt: skip
            else:
                self.read.append(self.reading.submit(self._finish, base, tier, key, member))
            return failed

        self.runs[base] = (tier, key, self.running.submit(profile))

    def _finish(self, base: Path, tier: str, key: str, member: Member) -> None:
        finish = getattr(self.profiler, "finish", None)  # a stand-in writes its values itself
        if finish is not None:
            finish(base)
        if tier == SOURCE:
            lines = read_source_lines(base.with_suffix(".ncu-rep"), self._own_source,
                                      Path(member.plan.kernels_dir))  # fmt: skip
            lines.to_parquet(base.with_suffix(".lines.parquet"), index=False)
        atomic_write(base.with_suffix(".json"), json.dumps({"key": key, "errors": {}}))

    def _own_source(self, target: str) -> Path:
        return self.batch.member(target)[0].own_source


def profile_stage(
    members: Sequence[Member],
    folder: Path,
    settings: NcuSettings,
    log: Callable[[str], None],
    profiler: ChunkProfiler | None = None,
) -> None:
    """Profile every configuration of the ``members`` that ran to the end: the source
    tier's first, then the explain tier's, then the sweep's, ``settings.chunk_size`` per
    ncu process (``profiler``: NcuProfiler by default). Write for each member, in its
    folder, the exact long table of all of them, the raw CSV for people, the
    configurations ncu could not profile with ncu's message (profile_errors.json), and
    beside them the rule results (findings.parquet), the deeper tiers' values
    (explain_long.parquet) and the source tier's stall samples per source line
    (source_lines.parquet).

    The tiers' chunks start one after the other without waiting for each other's end
    (settings.processes); a configuration a deeper tier then could not profile goes to
    the next tier down, whose chunks that change are profiled again. Each chunk's report
    and long table are kept in ``folder`` as the chunk completes (the marker file last,
    written atomically): a run stopped at any point profiles again only the chunks that
    had not completed, and those ncu failed on."""
    profiler = profiler or NcuProfiler(settings, log)
    batch = Batch(members)
    folder.mkdir(parents=True, exist_ok=True)
    size = settings.chunk_size
    tiers = _Tiers(batch, folder, settings, profiler, log)
    every = [t for m in members for t in batch.targets(m, m.ids)]
    modes = {SOURCE: settings.source, EXPLAIN: settings.explain}
    chosen = {tier: tier_ids(mode, batch) for tier, mode in modes.items()}
    try:
        # the deeper tiers first: what they profile, the sweep need not; the first pass
        # counts on every chunk, the next ones (rare) give the failed to the tier below
        failed: dict[str, dict[str, str]] = {SOURCE: {}, EXPLAIN: {}, SWEEP: {}}
        first = True
        while True:
            deeper: list[str] = []
            for tier in (SOURCE, EXPLAIN):
                targets = [t for t in chosen[tier] if t not in deeper]
                if targets and first:
                    log(f"{tier} tier: {len(targets)} configurations ({', '.join(targets)})")
                tiers.profile(tier, windows(batch, targets, size))
                deeper += [t for t in targets if t not in failed[tier]]
            if first:
                # the sweep's chunks by position among every profiled configuration,
                # without those a deeper tier profiled: which is fastest may change on a
                # rerun without moving the rest
                log(f"profiling {len(every) - len(deeper)} configurations in ncu processes "
                    f"of up to {size} (sweep tier)")  # fmt: skip
            tiers.profile(SWEEP, windows(batch, every, size), deeper)
            now, first = tiers.failed(), False
            if all(now[t].keys() == failed[t].keys() for t in (SOURCE, EXPLAIN)):
                break
            failed = now
        errors = now[SWEEP]
    except BaseException:
        tiers.stop()
        raise
    finally:
        tiers.wait()
    started = time.perf_counter()
    _write_members(batch, tiers.done(), errors)
    log(f"{len(members)} jobs' profiles written in {time.perf_counter() - started:.1f} s")


def _write_members(batch: Batch, done: list[tuple[Path, str]],
                   failed: dict[str, str]) -> None:  # fmt: skip
    """Each member's files, from the chunks ``done``: values, CSV, errors (``failed``),
    findings, the explain tier's values and source lines."""
    # each chunk's values with its tier: (tier, config, kernel) names a kernel (long_table)
    longs = {base: pd.read_parquet(base.with_suffix(".parquet")).assign(tier=tier)
             for base, tier in done if base.with_suffix(".parquet").is_file()}  # fmt: skip
    every = _concat(list(longs.values()), LONG_COLUMNS)
    long = batch.split(every)
    explain = batch.split(every[every["tier"] != SWEEP])
    lines = batch.split(_frames([b.with_suffix(".lines.parquet") for b, _ in done], LINE_COLUMNS))
    # rule results last: reading them changes how ncu_report names derived metrics' units
    findings = batch.split(_frames([_findings(b, t) for b, t in done], FINDING_COLUMNS))
    texts = split_csv([(b.with_suffix(".csv"), frame) for b, frame in longs.items()], batch)
    errors: dict[str, dict[str, str]] = {m.key: {} for m in batch.members}
    for target, why in failed.items():
        key, config = split_target(target)
        errors[key][config] = why
    for member in batch.members:
        out, key = member.out, member.key
        out.mkdir(parents=True, exist_ok=True)
        write_long(long[key], out / NCU_LONG)
        atomic_write(out / NCU_RAW, texts[key])
        atomic_write(out / PROFILE_ERRORS, json.dumps(errors[key], indent=1))
        findings[key].to_parquet(out / FINDINGS, index=False)
        write_long(explain[key], out / EXPLAIN_LONG)
        lines[key].to_parquet(out / SOURCE_LINES, index=False)


def _findings(base: Path, tier: str) -> Path:
    """The rule results of a chunk's report, beside it: read once per report (a resumed
    run keeps those of the chunks it kept)."""
    path, report = base.with_suffix(".findings.parquet"), base.with_suffix(".ncu-rep")
    fresh = path.is_file() and (
        not report.is_file() or path.stat().st_mtime >= report.stat().st_mtime)  # fmt: skip
    if not fresh:
        read_findings(report, tier).to_parquet(path, index=False)
    return path


def _forget(base: Path) -> None:
    """Remove what an earlier run left of a chunk."""
    for suffix in (".json", ".parquet", ".csv", ".ncu-rep", ".findings.parquet", ".lines.parquet",
                   ".work.json", ".gate"):  # fmt: skip
        base.with_suffix(suffix).unlink(missing_ok=True)
