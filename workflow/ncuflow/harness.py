"""GPU stage: compile every configuration, check it against the reference, time it.

The measuring itself runs in a worker process (``python -m ncuflow.harness measure-worker``)
that the stage restarts when a kernel takes the CUDA context down: the faulting
configuration is recorded as ``launch_error`` and the sweep goes on. The same module
provides the worker that ``ncu`` profiles (``profile-worker``): one process that launches
each configuration once inside an NVTX range named after its ``config_id``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import records
from .errors import NcuflowError
from .spec import Family, Variant, storage_dtype
from .timing import TimingPolicy, adaptive_repeats, timing_stats
from .vocab import (
    COMPILE_ERROR,
    LAUNCH_ERROR,
    OK,
    PENDING,
    WRONG_RESULT,
    nvtx_name,
    plan_variant,
    profiled_ids,
)

# The worker exits with this code after a fault that leaves the CUDA context unusable.
EXIT_CONTEXT_LOST = 3
_TMP_SOURCE = re.compile(r"\S*/tmp[^\s:]*\.cu")


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        raise NcuflowError(
            "CuPy is not installed: GPU mode needs it (pip install -e '.[gpu]'), "
            "or set mode: replay"
        ) from None
    return cupy


def _shape(exprs: tuple[Any, ...], dims: dict[str, int]) -> tuple[int, ...]:
    return tuple(int(e(dims)) for e in exprs)


class Problem:
    """Inputs, outputs and the float64 reference for one problem size."""

    def __init__(self, family: Family, variant: Variant, dims: dict[str, int], seed: int) -> None:
        cp = _cupy()
        rng = cp.random.default_rng(seed)
        self.dims = dims
        # Uniform in [-1, 1): never zeros, and signs that make cancellation errors visible.
        in_dtype, out_dtype = storage_dtype(variant.dtype), storage_dtype(variant.out_dtype)
        self.inputs = {
            name: (rng.random(_shape(shape, dims), dtype=cp.float32) * 2 - 1).astype(in_dtype)
            for name, shape in family.inputs.items()
        }
        self.outputs = {
            name: cp.empty(_shape(shape, dims), dtype=out_dtype)
            for name, shape in family.outputs.items()
        }
        # The reference sees exactly the values the kernel sees (fp16-rounded for fp16 inputs).
        reference = family.function(family.reference)
        self.reference = reference(**{k: v.astype(cp.float64) for k, v in self.inputs.items()})
        tensors = {**self.inputs, **self.outputs}
        self.args = tuple(tensors[a] if a in tensors else np.int32(dims[a]) for a in family.args)

    def poison(self) -> None:
        for out in self.outputs.values():
            out.fill(np.nan)

    def rel_error(self) -> tuple[float, str]:
        """Largest relative Frobenius error over the outputs, or NaN and what is missing."""
        cp = _cupy()
        worst = 0.0
        for name, out in self.outputs.items():
            unwritten = int(cp.isnan(out).sum())
            if unwritten:
                return float("nan"), f"{unwritten} of {out.size} elements of {name} never written"
            ref = self.reference[name]
            err = float(cp.linalg.norm((out.astype(cp.float64) - ref).ravel()))
            scale = float(cp.linalg.norm(ref.ravel())) or 1.0
            worst = max(worst, err / scale)
        return worst, ""


@dataclass
class Launcher:
    """A compiled configuration: call it to launch once on the current stream.

    A host variant (``runs_on: cpu``) works on host copies of the arrays: ``publish``
    copies its outputs to the device arrays that the check reads."""

    launch: Callable[[], None]
    attributes: dict[str, int]
    on_host: bool = False
    publish: Callable[[], None] = lambda: None


def _host_launcher(fn: Callable[..., None], problem: Problem) -> Launcher:
    cp = _cupy()
    outputs = {id(out): np.full(out.shape, np.nan, dtype=out.dtype)
               for out in problem.outputs.values()}  # fmt: skip
    args = tuple(
        outputs.get(id(a), cp.asnumpy(a)) if isinstance(a, cp.ndarray) else a for a in problem.args
    )

    def publish() -> None:
        for out in problem.outputs.values():
            out.set(outputs[id(out)])

    return Launcher(lambda: fn(*args), {}, on_host=True, publish=publish)


@functools.cache
def toolkit_includes() -> tuple[str, ...]:
    """The CUDA toolkit's include folder, where it has headers NVRTC's own may lack.

    The CUDA headers that come with pip's NVRTC have mma.h without the crt/mma.h it
    includes; the toolkit's folder (CUDA_PATH, beside nvcc, or /usr/local/cuda) has both."""
    nvcc = shutil.which("nvcc")
    candidates = [os.environ.get("CUDA_PATH"), nvcc and str(Path(nvcc).resolve().parents[1]),
                  "/usr/local/cuda"]  # fmt: skip
    for root in filter(None, candidates):
        include = Path(root) / "include"
        if (include / "crt" / "mma.h").is_file():
            return (f"-I{include}",)
    return ()


def build_launcher(
    family: Family, variant: Variant, row: dict[str, Any], problem: Problem
) -> Launcher:
    """Compile (CuPy caches the binary per source and options) and bind the arguments."""
    if not variant.is_cuda:
        fn = family.function(variant.library or "")
        if variant.runs_on == "cpu":
            return _host_launcher(fn, problem)
        return Launcher(lambda: fn(*problem.args), {})
    cp = _cupy()
    defines = tuple(f"-D{k}={v}" for k, v in row["params"].items())
    # -lineinfo lets the Nsight Compute GUI show the source beside the SASS
    # CuPy's cache keys on the source and the options, not on included headers: the
    # family's fingerprint (every file of its folder) makes a changed header recompile
    options = ("-std=c++17", "-lineinfo", f"-I{variant.path.parent.resolve()}",
               *toolkit_includes(), f"-DNCUFLOW_FAMILY_HASH={family.fingerprint}",
               *defines)  # fmt: skip
    module = cp.RawModule(code=variant.source, options=options)
    fn = module.get_function(variant.kernel)
    dynamic_smem = int(row["dynamic_smem"])
    if dynamic_smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = dynamic_smem
    grid, block = tuple(row["grid"]), tuple(row["block"])

    def launch() -> None:
        fn(grid, block, problem.args, shared_mem=dynamic_smem)

    attributes = {
        "registers_per_thread_compiled": fn.num_regs,
        "static_smem_bytes": fn.shared_size_bytes,
        "local_bytes_per_thread": fn.local_size_bytes,
    }
    return Launcher(launch, attributes)


def _cuda_errors() -> tuple[type[BaseException], ...]:
    from cupy_backends.cuda.api.driver import CUDADriverError
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    return (CUDARuntimeError, CUDADriverError)


def context_alive() -> bool:
    cp = _cupy()
    try:
        cp.cuda.runtime.deviceSynchronize()
        probe = cp.ones(1, dtype=cp.float32)
        return float(probe.sum()) == 1.0
    except _cuda_errors():
        return False


def time_launches(launch: Callable[[], None], repeats: int, flush: Any) -> list[float]:
    """Milliseconds of each of ``repeats`` launches, each between its own pair of CUDA events."""
    cp = _cupy()
    stream = cp.cuda.get_current_stream()
    starts = [cp.cuda.Event() for _ in range(repeats)]
    ends = [cp.cuda.Event() for _ in range(repeats)]
    for i in range(repeats):
        if flush is not None:
            # evict the inputs from L2, as ncu does before each profiled launch
            cp.cuda.runtime.memsetAsync(flush.data.ptr, i & 0xFF, flush.nbytes, stream.ptr)
        starts[i].record(stream)
        launch()
        ends[i].record(stream)
    ends[-1].synchronize()
    return [float(cp.cuda.get_elapsed_time(s, e)) for s, e in zip(starts, ends, strict=True)]


def time_host_calls(call: Callable[[], None], repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` calls of host code, by the host's clock."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1e3)
    return times


def time_config(launcher: Launcher, policy: TimingPolicy, flush: Any) -> dict[str, Any]:
    """Warm up, then time in batches until the median is known within the policy's target
    (adaptive repeats); the record's timing fields."""
    for _ in range(policy.warmup):
        launcher.launch()
    if launcher.on_host:
        times, note = adaptive_repeats(lambda n: time_host_calls(launcher.launch, n), policy)
    else:
        times, note = adaptive_repeats(lambda n: time_launches(launcher.launch, n, flush), policy)
    return {**timing_stats(times), "repeats": len(times), "times_ms": times,
            "time_unstable": bool(note), "time_note": note}  # fmt: skip


def _compile_message(exc: BaseException, variant: Variant) -> str:
    return _TMP_SOURCE.sub(variant.path.name, str(exc)).strip()


def measure_config(
    family: Family,
    variant: Variant,
    row: dict[str, Any],
    problem: Problem,
    timing: dict[str, Any],
    flush: Any,
) -> dict[str, Any]:
    """Compile, check (poisoned output against the reference), then time one configuration."""
    cp = _cupy()
    from cupy.cuda.compiler import CompileException

    record: dict[str, Any] = {"status": OK, "error": "", "rel_error": None, "repeats": 0}
    cuda_errors = _cuda_errors()
    try:
        launcher = build_launcher(family, variant, row, problem)
    except (CompileException, *cuda_errors) as exc:  # a kernel name missing from the cubin too
        return {**record, "status": COMPILE_ERROR, "error": _compile_message(exc, variant)}
    record.update(launcher.attributes)
    try:
        problem.poison()
        launcher.launch()
        launcher.publish()
        cp.cuda.runtime.deviceSynchronize()
    except cuda_errors as exc:
        return {**record, "status": LAUNCH_ERROR, "error": f"checked launch failed: {exc}"}
    rel_error, problem_text = problem.rel_error()
    tolerance = family.tolerance[variant.dtype]
    record["rel_error"] = None if np.isnan(rel_error) else rel_error
    if problem_text or not rel_error <= tolerance:
        detail = problem_text or f"relative error {rel_error:.3g} exceeds {tolerance:g}"
        return {**record, "status": WRONG_RESULT, "error": detail}
    try:
        timed = time_config(launcher, TimingPolicy.from_config(timing), flush)
    except cuda_errors as exc:
        return {**record, "status": LAUNCH_ERROR, "error": f"timed launch failed: {exc}"}
    return {**record, **timed}


def _groups(rows: list[dict[str, Any]]) -> Iterator[tuple[dict[str, int], list[dict[str, Any]]]]:
    """Configurations grouped by problem size, so that inputs are drawn once per size."""
    sizes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        sizes.setdefault(json.dumps(row["dims"], sort_keys=True), []).append(row)
    for group in sizes.values():
        yield group[0]["dims"], group


def _seed(plan: dict[str, Any]) -> int:
    if plan["seed"] is not None:
        return int(plan["seed"])
    return int(np.random.SeedSequence().generate_state(1)[0])


def _load(plan_path: Path) -> tuple[dict[str, Any], Family, Variant]:
    plan = json.loads(Path(plan_path).read_text())
    return plan, *plan_variant(plan)


def measure_worker(plan_path: Path, records_path: Path) -> int:
    """Measure every pending configuration that has no record yet; append records."""
    plan, family, variant = _load(plan_path)
    done, _ = records.read(records_path)
    todo = [r for r in plan["configs"] if r["status"] == PENDING and r["config_id"] not in done]
    seed = _seed(plan)
    flush = None
    if plan["timing"]["flush_l2"]:
        cp = _cupy()
        l2_bytes = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["l2CacheSize"]
        flush = cp.empty(2 * l2_bytes, dtype=cp.uint8)
    for dims, rows in _groups(todo):
        problem = Problem(family, variant, dims, seed)
        for row in rows:
            records.append(records_path, {"event": "start", "config_id": row["config_id"]})
            record = measure_config(family, variant, row, problem, plan["timing"], flush)
            record.update(seed=seed, fingerprint=records.fingerprint(plan, row))
            records.append(
                records_path, {"event": "done", "config_id": row["config_id"], "record": record}
            )
            if record["status"] == LAUNCH_ERROR and not context_alive():
                return EXIT_CONTEXT_LOST
        del problem
    return 0


def _crash_record(plan: dict[str, Any], row: dict[str, Any], code: int, tail: str) -> dict:
    return {
        "status": LAUNCH_ERROR,
        "error": f"the worker died (exit code {code}) running this configuration: {tail}",
        "rel_error": None,
        "repeats": 0,
        "fingerprint": records.fingerprint(plan, row),
    }


MEASURE_WORKER = (sys.executable, "-m", "ncuflow.harness", "measure-worker")


def measure_stage(
    plan_path: Path,
    out_path: Path,
    log: Callable[[str], None],
    worker: Sequence[str] = MEASURE_WORKER,
) -> None:
    """Run measure workers until every pending configuration has a record; write them all.

    Records of an earlier, interrupted run are reused when their fingerprint matches.
    ``worker`` is the command of the worker process (followed by plan and records paths).
    """
    plan = json.loads(Path(plan_path).read_text())
    pending = {r["config_id"]: r for r in plan["configs"] if r["status"] == PENDING}
    partial = out_path.with_name(out_path.name + ".partial.jsonl")
    done, _ = records.read(partial)
    if any(rec.get("fingerprint") != records.fingerprint(plan, pending[c])
           for c, rec in done.items() if c in pending):  # fmt: skip
        log("records of an earlier run no longer match their configurations: measuring anew")
        partial.unlink()
    elif done:
        log(f"resuming: {len(done)} of {len(pending)} configurations measured by an earlier run")
    command = [*worker, str(plan_path)]
    while not pending.keys() <= (done := records.read(partial)[0]).keys():
        proc = subprocess.run([*command, str(partial)], capture_output=True, text=True)
        after, crashed = records.read(partial)
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        if proc.returncode in (0, EXIT_CONTEXT_LOST):
            if len(after) == len(done):
                raise NcuflowError(f"the measuring worker made no progress:\n{tail}")
        elif crashed:
            # the configuration it was running took the process down: record it and go on
            culprit = pending[crashed[-1]]
            entry = _crash_record(plan, culprit, proc.returncode, tail)
            records.append(partial, {"event": "done", "config_id": crashed[-1], "record": entry})
        else:
            raise NcuflowError(f"the measuring worker failed before any kernel ran:\n{tail}")
    for config_id in pending:
        rec = done[config_id]
        shown = f"{rec['time_ms']:.4f} ms" if rec["status"] == OK else rec["error"][:300]
        log(f"{config_id}: {rec['status']} {shown}")
    out_path.write_text(json.dumps({c: done[c] for c in pending}, indent=1))
    partial.unlink()


def profile_worker(plan_path: Path, measure_path: Path, only: list[str]) -> int:
    """The process ncu profiles: each ok configuration once, inside its NVTX range.

    ``only`` restricts it to some configurations (the benchmark's one-per-process loop)."""
    cp = _cupy()
    from cupy.cuda import nvtx

    plan, family, variant = _load(plan_path)
    profiled = set(profiled_ids(variant, json.loads(Path(measure_path).read_text())))
    rows = [r for r in plan["configs"] if r["config_id"] in profiled]
    if only:
        rows = [r for r in rows if r["config_id"] in only]
    seed = _seed(plan)
    for dims, group in _groups(rows):
        problem = Problem(family, variant, dims, seed)
        for row in group:
            launcher = build_launcher(family, variant, row, problem)
            launcher.launch()  # module load and library set-up stay outside the range
            cp.cuda.runtime.deviceSynchronize()
            nvtx.RangePush(nvtx_name(row["config_id"]))
            launcher.launch()
            nvtx.RangePop()
            cp.cuda.runtime.deviceSynchronize()
        del problem
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ncuflow.harness")
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure-worker")
    m.add_argument("plan", type=Path)
    m.add_argument("records", type=Path)
    p = sub.add_parser("profile-worker")
    p.add_argument("plan", type=Path)
    p.add_argument("measure", type=Path)
    p.add_argument("only", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "measure-worker":
        return measure_worker(args.plan, args.records)
    return profile_worker(args.plan, args.measure, args.only)


if __name__ == "__main__":
    sys.exit(main())
