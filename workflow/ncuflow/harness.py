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
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import records
from .errors import NcuflowError
from .problem import Problem
from .spec import C_TYPES, Family, Launch, Variant, leading_dim, local_includes
from .timing import TimingPolicy, adaptive_repeats, timing_stats
from .tma import TensorMap, TensorMapError, encode
from .vocab import (
    COMPILE_ERROR,
    LAUNCH_ERROR,
    OK,
    PENDING,
    SKIPPED,
    TIMEOUT,
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


def _array_module(variant: Variant) -> Any:
    """CuPy for a variant that runs on the GPU, NumPy for a host one (no CUDA needed)."""
    return np if variant.runs_on == "cpu" else _cupy()


class LaunchRefused(NcuflowError):
    """The device refused a configuration's launch settings before any launch."""


@dataclass
class Launcher:
    """A compiled configuration: its steps (one per launch) in order; ``launch`` runs them
    all once on the current stream. A host variant's steps run on the host."""

    steps: list[tuple[str, Callable[[], None]]]
    attributes: dict[str, int]
    on_host: bool = False
    # the steps only enqueue GPU work, so a batch may wait behind a gate (Gate); a step that
    # moves host memory may wait for the stream, which a held stream would never reach
    gated: bool = False

    def launch(self) -> None:
        for _, step in self.steps:
            step()


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


def compile_options(
    family: Family, variant: Variant, params: dict[str, int], dtypes: tuple[str, str]
) -> tuple[str, ...]:
    """NVRTC options of one configuration: tunables as -D, the element types, the folders
    of the variant and of every file it includes."""
    folders = dict.fromkeys([variant.path.parent.resolve(),
                             *(p.parent for p in local_includes(variant.path))])  # fmt: skip
    # -lineinfo lets the Nsight Compute GUI show the source beside the SASS
    # CuPy's cache keys on the source and the options, not on included headers: the
    # family's fingerprint (its files and what they include) makes a changed header recompile
    arch = (f"--gpu-architecture={variant.arch}",) if variant.arch else ()
    return ("-std=c++17", "-lineinfo", *arch, *(f"-I{f}" for f in folders), *toolkit_includes(),
            f"-DNCUFLOW_FAMILY_HASH={family.fingerprint}",
            f"-DNCUFLOW_IN_T={C_TYPES[dtypes[0]]}", f"-DNCUFLOW_OUT_T={C_TYPES[dtypes[1]]}",
            *(f"-D{k}={v}" for k, v in params.items()))  # fmt: skip


def _step_args(launch: Launch, problem: Problem, env: dict[str, int]) -> tuple[Any, ...]:
    """A launch's arguments: its own list (names or index expressions) or the family's."""
    if launch.args is None:
        return tuple(problem.arg(a) for a in problem.family.args)
    named = {*problem.inputs, *problem.outputs, *problem.variant.scratch,
             *problem.variant.tensor_maps, *problem.scalars}  # fmt: skip
    return tuple(problem.arg(a.text) if a.text in named else problem.index(int(a(env)))
                 for a in launch.args)  # fmt: skip


def _library_step(
    fn: Callable[..., Any], args: tuple[Any, ...], params: dict[str, int], problem: Problem
) -> Callable[[], None]:
    def step() -> None:
        returned = fn(*args, **params)
        if isinstance(returned, dict):  # outputs the library allocated itself (cuDNN)
            problem.returned.update(returned)

    return step


def build_launcher(
    family: Family, variant: Variant, row: dict[str, Any], problem: Problem
) -> Launcher:
    """Compile (CuPy caches the binary per source and options) and bind the arguments of
    each launch the configuration makes."""
    env = family.scope(variant, row["dims"], row["params"], (problem.in_dtype, problem.out_dtype))
    by_name = {launch.name: launch for launch in variant.launches}
    active = [(by_name[g["name"]], g) for g in row["launches"]]
    module = None
    if variant.arch:
        _check_arch(variant.arch)
    if variant.is_cuda:
        module = _cupy().RawModule(
            code=variant.source,
            options=compile_options(
                family, variant, row["params"], (problem.in_dtype, problem.out_dtype)
            ),
        )
    used = {a.text for launch, _ in active for a in launch.args or ()}
    maps = [variant.tensor_maps[name] for name in sorted(used & set(variant.tensor_maps))]
    described = {m.tensor for m in maps}
    problem.prepare_scratch(env, (used | described) & set(variant.scratch))
    # only kernels take aligned inputs (spec.py): the copies are the harness's kernel's
    lengths = {name: env[leading_dim(name)] for name in variant.row_alignment}
    steps = problem.pad_rows(lengths, copy_rows)
    for tensor_map in maps:  # after the buffers they may describe
        problem.scratch[tensor_map.name] = _device_tensor_map(tensor_map, problem, env)
    attributes: dict[str, int] = {}
    for launch, geometry in active:
        args = _step_args(launch, problem, env)
        if launch.library:
            fn = family.function(launch.library)
            steps.append((launch.name, _library_step(fn, args, row["params"], problem)))
            continue
        assert module is not None
        kernel = module.get_function(launch.kernel)
        dynamic_smem = int(geometry["dynamic_smem"])
        if dynamic_smem > 48 * 1024:
            try:
                kernel.max_dynamic_shared_size_bytes = dynamic_smem
            except _cuda_errors() as exc:  # the device's limit is lower than the declared one
                raise LaunchRefused(
                    f"{launch.name}: the device refuses {dynamic_smem} B of dynamic shared "
                    f"memory ({exc}); lower device_limits.max_smem_per_block_optin to its limit"
                ) from None
        grid, block = tuple(geometry["grid"]), tuple(geometry["block"])
        steps.append(
            (launch.name, functools.partial(kernel, grid, block, args, shared_mem=dynamic_smem))
        )
        # the variant's largest kernel stands for it in the table
        for key, value in (("registers_per_thread_compiled", kernel.num_regs),
                           ("static_smem_bytes", kernel.shared_size_bytes),
                           ("local_bytes_per_thread", kernel.local_size_bytes)):  # fmt: skip
            attributes[key] = max(attributes.get(key, 0), int(value))
    on_device = all(t.memory == "device" for t in family.tensors.values())
    return Launcher(steps, attributes, on_host=variant.runs_on == "cpu",
                    gated=variant.runs_on == "gpu" and on_device)  # fmt: skip


def _check_arch(arch: str) -> None:
    """Refuse, before compiling, a variant built for another architecture than this GPU's
    (sm_90a code runs on compute capability 9.0 only)."""
    capability = _cupy().cuda.Device().compute_capability  # '90'
    if arch.removeprefix("sm_").rstrip("a") != capability:
        raise LaunchRefused(f"the kernels are built for {arch}; this GPU is compute "
                            f"capability {capability[:-1]}.{capability[-1]}")  # fmt: skip


def _device_tensor_map(tensor_map: TensorMap, problem: Problem, env: dict[str, int]) -> Any:
    """A tensor map of one configuration, encoded on the host and copied to the device
    (kernels take its address)."""
    array = problem.arg(tensor_map.tensor)
    try:
        encoded = encode(tensor_map, tensor_map.sizes(env), str(array.dtype), array.data.ptr)
    except TensorMapError as exc:  # refused before any launch, like too much shared memory
        raise LaunchRefused(str(exc)) from None
    return _cupy().asarray(np.frombuffer(encoded, dtype=np.uint8))


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


# Reads every 16 bytes of a buffer twice the size of L2 with .cg loads (cached in L2
# only): L2 then holds clean lines of the buffer alone, and the dirty lines the last launch
# left are written back now rather than during the next timed launch.
_L2_FLUSH_SOURCE = r"""
extern "C" __global__ void ncuflow_l2_flush(const int4* __restrict__ buffer, long long n,
                                            int* __restrict__ sink) {
  int folded = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(buffer + i);
    folded ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (folded == 0x5EED) *sink = folded;  // the buffer is zeros: never; keeps the loads
}
"""


# dst (rows × ld elements) = src (rows × cols) with zeros from column cols on: a thread per
# Chunk of dst (as many bytes as the rows' alignment, up to 16), gathered from Elements
# (unsigned integers of the element's size: a copy of bits), a grid-stride loop.
_PAD_ROWS_SOURCE = r"""
template <typename Element, typename Chunk>
__global__ void ncuflow_pad_rows(const Element* __restrict__ src, Chunk* __restrict__ dst,
                                 long long rows, int cols, int ld) {
  constexpr int kPer = sizeof(Chunk) / sizeof(Element);
  const long long chunks_per_row = ld / kPer, total = rows * chunks_per_row;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = i / chunks_per_row;
    const int c0 = static_cast<int>(i - row * chunks_per_row) * kPer;
    const Element* s = src + row * cols;
    union { Chunk chunk; Element values[kPer]; } out;
#pragma unroll
    for (int e = 0; e < kPer; ++e) out.values[e] = c0 + e < cols ? s[c0 + e] : Element(0);
    dst[i] = out.chunk;
  }
}
"""
_UNSIGNED = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long",
             16: "uint4"}  # fmt: skip


@functools.cache
def _pad_rows_kernel(element_bytes: int, chunk_bytes: int) -> Any:
    name = f"ncuflow_pad_rows<{_UNSIGNED[element_bytes]}, {_UNSIGNED[chunk_bytes]}>"
    module = _cupy().RawModule(code=_PAD_ROWS_SOURCE, options=("-std=c++17",),
                               name_expressions=[name])  # fmt: skip
    return module.get_function(name)


def copy_rows(padded: Any, source: Any) -> Callable[[], None]:
    """The step that copies ``source`` (rows × cols) into the row-padded ``padded``
    (rows × ld, ld·element size a multiple of 2^n bytes) with 16-byte stores where the padded
    rows allow, leaving zeros past cols: CuPy's copy into a strided view ran twice as long."""
    rows, cols, ld = source.size // source.shape[-1], source.shape[-1], padded.shape[-1]
    element = source.dtype.itemsize
    row_bytes = ld * element
    chunk = min(16, row_bytes & -row_bytes)  # the largest power of two dividing a row
    kernel = _pad_rows_kernel(element, chunk)
    chunks = rows * row_bytes // chunk
    device = _cupy().cuda.Device()
    grid = (max(1, min(-(-chunks // 256), 8 * device.attributes["MultiProcessorCount"])),)
    args = (source, padded, np.int64(rows), np.int32(cols), np.int32(ld))
    return functools.partial(kernel, grid, (256,), args)


def l2_flush() -> Callable[[], None]:
    """A step that empties this GPU's L2 of everything a timed launch could reuse
    (``L2_FLUSH_METHOD``), on the current stream."""
    cp = _cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    buffer = cp.zeros(2 * props["l2CacheSize"] // 16 * 4, dtype=cp.int32)  # int4 elements
    sink = cp.zeros(1, dtype=cp.int32)
    kernel = cp.RawKernel(_L2_FLUSH_SOURCE, "ncuflow_l2_flush")
    grid, n = (4 * props["multiProcessorCount"],), np.int64(buffer.size // 4)
    flush = functools.partial(kernel, grid, (512,), (buffer, n, sink))
    flush()  # compiled and loaded now, not inside the first timed batch (behind a gate)
    return flush


# Holds the stream while the host enqueues a batch of timed launches, so that the GPU runs
# them back to back whatever the host is doing meanwhile (a host thread that falls behind
# would open idle gaps inside the timed intervals): spins until the host writes its ticket
# into page-locked memory (mapped: the same address on the device), or gives up after
# limit_ns and says so, so that a step that waits for the stream cannot hang the batch.
_GATE_SOURCE = r"""
extern "C" __global__ void ncuflow_gate(volatile unsigned int* __restrict__ words,
                                        unsigned int ticket, unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    if (words[0] >= ticket) return;  // words[0]: the last ticket the host released
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < limit_ns);
  words[1] = ticket;  // words[1]: the last ticket given up on
}
"""
# Commands (launches and event records) enqueued behind one gate: few enough that the
# stream's queue never fills while it is held (the host would block on a full queue).
GATE_COMMANDS = 128
GATE_LIMIT_S = 1.0


class Gate:
    """A kernel that holds the current stream until the host releases it (``hold``, then
    the batch's launches, then ``release``); ``gave_up`` after the batch has finished says
    whether any hold ended by its time limit instead (its batch may hold host gaps)."""

    def __init__(self, limit_s: float = GATE_LIMIT_S) -> None:
        cp = _cupy()
        self._memory = cp.cuda.alloc_pinned_memory(8)
        self._words = np.frombuffer(self._memory, dtype=np.uint32, count=2)
        self._words[:] = 0
        self._kernel = cp.RawKernel(_GATE_SOURCE, "ncuflow_gate")
        self._limit_ns = np.uint64(limit_s * 1e9)
        self._ticket = 0
        self._first = 1
        self.hold()  # compiled and loaded now, not inside the first batch; released at once
        self.release()

    def hold(self) -> None:
        self._ticket += 1
        args = (np.uint64(self._memory.ptr), np.uint32(self._ticket), self._limit_ns)
        self._kernel((1,), (1,), args)

    def release(self) -> None:
        self._words[0] = self._ticket

    def gave_up(self) -> bool:
        """Whether a hold since the last call ended by its limit (call after a sync)."""
        given_up = int(self._words[1]) >= self._first
        self._first = self._ticket + 1
        return given_up


def time_launches(
    steps: list[tuple[str, Callable[[], None]]],
    repeats: int,
    flush: Callable[[], None] | None,
    gate: Gate | None = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """Milliseconds of each of ``repeats`` runs of the steps, between a pair of CUDA events,
    and of each step alone (an event between consecutive steps). With a ``gate``, the
    repeats are enqueued behind it, GATE_COMMANDS commands at a time."""
    cp = _cupy()
    stream = cp.cuda.get_current_stream()
    events = [[cp.cuda.Event() for _ in range(len(steps) + 1)] for _ in range(repeats)]
    # a repeat: the flush, the steps and an event before and after each
    per_hold = max(1, GATE_COMMANDS // (2 * len(steps) + 2)) if gate else repeats
    for first in range(0, repeats, per_hold):
        if gate is not None:
            gate.hold()
        for marks in events[first : first + per_hold]:
            if flush is not None:  # evict the inputs from L2, as ncu does before each profile
                flush()
            marks[0].record(stream)
            for (_, step), mark in zip(steps, marks[1:], strict=True):
                step()
                mark.record(stream)
        if gate is not None:
            gate.release()
    events[-1][-1].synchronize()
    totals = [float(cp.cuda.get_elapsed_time(m[0], m[-1])) for m in events]
    per_step = {name: [float(cp.cuda.get_elapsed_time(m[j], m[j + 1])) for m in events]
                for j, (name, _) in enumerate(steps)}  # fmt: skip
    return totals, per_step


def time_host_calls(
    steps: list[tuple[str, Callable[[], None]]], repeats: int
) -> tuple[list[float], dict[str, list[float]]]:
    """Milliseconds of each of ``repeats`` runs of host code, and of each step, by the
    host's clock."""
    totals: list[float] = []
    per_step: dict[str, list[float]] = {name: [] for name, _ in steps}
    for _ in range(repeats):
        started = mark = time.perf_counter()
        for name, step in steps:
            step()
            now = time.perf_counter()
            per_step[name].append((now - mark) * 1e3)
            mark = now
        totals.append((mark - started) * 1e3)
    return totals, per_step


def time_config(
    launcher: Launcher,
    policy: TimingPolicy,
    flush: Callable[[], None] | None,
    gate: Gate | None = None,
) -> dict[str, Any]:
    """Warm up, then time in batches until the median is known within the policy's target
    (adaptive repeats); the record's timing fields, with each step's median where a
    configuration makes several launches. A GPU launcher's batches wait behind the ``gate``
    while they are enqueued; should a hold end by its limit (a step waited for the stream,
    or the host stalled for that long), that batch is timed again and the rest too without
    it, and the record's ``gated`` says so."""
    for _ in range(policy.warmup):
        launcher.launch()
    steps: dict[str, list[float]] = {name: [] for name, _ in launcher.steps}
    holding = gate if launcher.gated else None

    def batch(n: int) -> list[float]:
        nonlocal holding
        if launcher.on_host:
            totals, per_step = time_host_calls(launcher.steps, n)
        else:
            totals, per_step = time_launches(launcher.steps, n, flush, holding)
            if holding is not None and holding.gave_up():
                holding = None
                totals, per_step = time_launches(launcher.steps, n, flush)
        for name, values in per_step.items():
            steps[name] += values
        return totals

    times, note = adaptive_repeats(batch, policy)
    record = {**timing_stats(times), "repeats": len(times), "times_ms": times,
              "time_unstable": bool(note), "time_note": note}  # fmt: skip
    if not launcher.on_host:
        record["gated"] = holding is not None
    if len(steps) > 1:
        record["step_ms"] = {name: float(np.median(values)) for name, values in steps.items()}
    return record


def _compile_message(exc: BaseException, variant: Variant) -> str:
    return _TMP_SOURCE.sub(variant.path.name, str(exc)).strip()


def _errors(
    variant: Variant,
) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(errors of building a launcher, errors of running it): CUDA's for a GPU variant;
    a host variant's exceptions are bugs that stop the worker with their traceback."""
    if variant.runs_on == "cpu":
        return (), ()
    from cupy.cuda.compiler import CompileException

    cuda = _cuda_errors()
    return (CompileException, *cuda), cuda


def _synchronize(variant: Variant) -> None:
    if variant.runs_on == "gpu":
        _cupy().cuda.runtime.deviceSynchronize()


def measure_config(
    family: Family,
    variant: Variant,
    row: dict[str, Any],
    problem: Problem,
    timing: dict[str, Any],
    flush: Callable[[], None] | None,
    gate: Gate | None = None,
) -> dict[str, Any]:
    """Compile, check (poisoned outputs against the reference), then time one configuration."""
    build_errors, run_errors = _errors(variant)
    record: dict[str, Any] = {"status": OK, "error": "", "rel_error": None, "repeats": 0}
    try:
        launcher = build_launcher(family, variant, row, problem)
    except LaunchRefused as exc:
        return {**record, "status": LAUNCH_ERROR, "error": str(exc)}
    except build_errors as exc:  # a kernel name missing from the cubin too
        return {**record, "status": COMPILE_ERROR, "error": _compile_message(exc, variant)}
    record.update(launcher.attributes)
    try:
        problem.poison()
        launcher.launch()
        _synchronize(variant)
    except run_errors as exc:
        return {**record, "status": LAUNCH_ERROR, "error": f"checked launch failed: {exc}"}
    outcome = problem.check()
    record.update(rel_error=outcome.rel_error, max_abs_error=outcome.max_abs_error)
    if not outcome.ok:  # timed and profiled all the same, but never "best"
        record.update(status=WRONG_RESULT, error=outcome.message)
    try:
        timed = time_config(launcher, TimingPolicy.from_config(timing), flush, gate)
    except run_errors as exc:
        return {**record, "status": LAUNCH_ERROR, "error": f"timed launch failed: {exc}"}
    return {**record, **timed}


def missing_modules(variant: Variant) -> list[str]:
    """The Python modules a variant requires that this machine lacks."""
    return [m for m in variant.requires if importlib.util.find_spec(m) is None]


def _problem(
    plan: dict[str, Any], family: Family, variant: Variant, row: dict[str, Any], seed: int
) -> Problem:
    dtypes = (row["dtype"], row.get("out_dtype", variant.out_dtype))
    scalars = plan.get("scalars", {})
    return Problem(family, variant, row["dims"], scalars, seed, dtypes, _array_module(variant))


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
    from .device import measured_on

    plan, family, variant = _load(plan_path)
    done, _ = records.read(records_path)
    todo = [r for r in plan["configs"] if r["status"] == PENDING and r["config_id"] not in done]
    seed = _seed(plan)
    missing = missing_modules(variant)
    if missing:  # decided where the job runs: a vendor library may be on the GPU machine only
        reason = (f"variant {variant.name} requires {', '.join(missing)}, which this machine "
                  "does not have; it is skipped, never faked")  # fmt: skip
        for row in todo:
            record = {"status": SKIPPED, "error": reason, "rel_error": None, "repeats": 0,
                      "fingerprint": records.fingerprint(plan, row)}  # fmt: skip
            records.append(
                records_path, {"event": "done", "config_id": row["config_id"], "record": record}
            )
        return 0
    device, flush, gate = measured_on(variant.runs_on), None, None
    if variant.runs_on == "gpu":
        gate = Gate()
        if plan["timing"]["flush_l2"]:
            flush = l2_flush()
    for _, rows in _groups(todo):
        problem = _problem(plan, family, variant, rows[0], seed)
        for row in rows:
            records.append(records_path, {"event": "start", "config_id": row["config_id"]})
            record = measure_config(family, variant, row, problem, plan["timing"], flush, gate)
            record.update(seed=seed, fingerprint=records.fingerprint(plan, row), device=device)
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
# How fast the slowest configuration worth waiting for is assumed to be, for the time
# limit a configuration gets when timing.timeout_s is null.
SLOWEST_FLOP_PER_S, SLOWEST_BYTES_PER_S, WATCH_S = 1e12, 1e11, 0.25


def time_limit(timing: dict[str, Any], row: dict[str, Any]) -> float:
    """Seconds a configuration may take (compile, check, time): timing.timeout_s, or the
    floor plus twice the timing budget plus ten times its warm-up, checked and first timed
    launches at 1 TFLOP/s or 100 GB/s, whichever is slower."""
    if timing.get("timeout_s"):
        return float(timing["timeout_s"])
    return (
        float(timing.get("timeout_floor_s", 60))
        + 2 * float(timing["budget_s"])
        + (10 * (int(timing["warmup"]) + 2) * slowest_launch_s(row))
    )


def slowest_launch_s(row: dict[str, Any]) -> float:
    """A launch of the configuration at 1 TFLOP/s or 100 GB/s, whichever takes longer."""
    return max(row["flops"] / SLOWEST_FLOP_PER_S, row["min_bytes"] / SLOWEST_BYTES_PER_S)


def watch(command: Sequence[str], partial: Path, limits: dict[str, float]) -> tuple[int, str, str]:
    """Run one worker and kill it (its whole process group) when the configuration it is
    on outlives its limit. (exit code, the tail of its stderr, the configuration killed
    for its time or '')."""
    with tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr,
                                start_new_session=True)  # fmt: skip
        current, since, killed = None, time.monotonic(), ""
        while proc.poll() is None:
            time.sleep(WATCH_S)
            now, running = time.monotonic(), records.running(partial)
            if running != current:
                current, since = running, now
            elif current is not None and now - since > limits[current]:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                killed = current
        stderr.seek(0)
        tail = "\n".join(stderr.read().strip().splitlines()[-15:])
    return proc.returncode, tail, killed


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
    command = [*worker, str(plan_path), str(partial)]
    limits = {c: time_limit(plan["timing"], row) for c, row in pending.items()}
    while not pending.keys() <= (done := records.read(partial)[0]).keys():
        returncode, tail, killed = watch(command, partial, limits)
        after, crashed = records.read(partial)
        if killed:
            entry = {"status": TIMEOUT, "rel_error": None, "repeats": 0,
                     "fingerprint": records.fingerprint(plan, pending[killed]),
                     "error": f"no result after {limits[killed]:.0f} s (its time limit, "
                              "timing.timeout_s): killed with its worker; a fresh worker "
                              "went on with the rest"}  # fmt: skip
            records.append(partial, {"event": "done", "config_id": killed, "record": entry})
            log(f"{killed}: timeout after {limits[killed]:.0f} s")
        elif returncode in (0, EXIT_CONTEXT_LOST):
            if len(after) == len(done):
                raise NcuflowError(f"the measuring worker made no progress:\n{tail}")
        elif crashed:
            # the configuration it was running took the process down: record it and go on
            culprit = pending[crashed[-1]]
            entry = _crash_record(plan, culprit, returncode, tail)
            records.append(partial, {"event": "done", "config_id": crashed[-1], "record": entry})
        else:
            raise NcuflowError(f"the measuring worker failed before any kernel ran:\n{tail}")
    for config_id in pending:
        rec = done[config_id]
        shown = f"{rec['time_ms']:.4f} ms" if rec["status"] == OK else rec["error"][:300]
        log(f"{config_id}: {rec['status']} {shown}")
    records.atomic_write(out_path, json.dumps({c: done[c] for c in pending}, indent=1))
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
    for _, group in _groups(rows):
        problem = _problem(plan, family, variant, group[0], seed)
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
