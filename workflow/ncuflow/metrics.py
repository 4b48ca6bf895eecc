"""The metric registry: every ncu counter ncuflow reads, every ceiling, every derived column.

The profile stage asks ncu for exactly :func:`required_metrics` (besides the sections);
:mod:`ncuflow.derive` computes the :data:`COLUMNS` per kernel and reduces them per
configuration; the bound rule and the figures read precisions and levels from here.
Adding a ceiling or a column is one entry below.

Counting rules (docs/methods.md, "Where each number comes from"):

* CUDA-core FLOPs per precision come from predicated-on thread instruction counts: an FMA
  is 2 FLOPs, an add or a multiply 1; the half-precision instructions are packed (HFMA2:
  two lanes), so ncu's half-precision roofline counts 4 per HFMA and 2 per HADD/HMUL.
* Tensor-core counters (``sm__ops_path_tensor_src_*``) already count FLOPs, 2 per FMA.
* ``flops_counted`` sums only the precisions the variant declares it computes in
  (``compute:``, default from its dtype). Compilers move and zero registers with
  instructions of other pipes (NVRTC zeroes with ``HFMA2.MMA R, -RZ, RZ, 0, 0`` in float32
  kernels, nvcc often with ``CS2R``/``MOV``); those stay visible in the per-precision
  columns but never count as the variant's arithmetic, whichever instruction does them.
* Memory levels follow the Nsight Compute hierarchical roofline on compute capability
  9.0: L1 bytes are ``l1tex__lsu_writeback_active_mem_lgds`` cycles × 128 B, L2 bytes
  ``lts__lts2xbar_cycles_active`` × 32 B, DRAM bytes ``dram__bytes``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .breakdown import breakdown_metrics

Get = Callable[[str], float]

SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
DURATION = "gpu__time_duration.sum"


def _thread_inst(op: str) -> str:
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"


def _peak(metric: str) -> str:
    return f"{metric}.sum.peak_sustained"


@dataclass(frozen=True)
class Precision:
    """A compute ceiling: what counts its FLOPs and where its dense peak comes from."""

    name: str
    label: str
    counts: tuple[tuple[str, float], ...]  # (ncu counter, FLOPs per count)
    # Alternatives, first one ncu reported wins: (per-cycle peak metric, FLOPs per unit).
    peaks: tuple[tuple[str, float], ...]
    # Dense FLOP per clock per SM from NVIDIA's architecture documents, by compute
    # capability: the cross-check of the ncu peak (tests), and the fallback when ncu has none.
    published_per_sm: Mapping[str, float]
    source: str


def _tensor(src: str, label: str, dense: str, published: Mapping[str, float]) -> Precision:
    counter = f"sm__ops_path_tensor_src_{src}.sum"
    return Precision(
        name=f"tensor_{label}",
        label=f"{label.upper()} tensor",
        counts=((counter, 1.0),),
        peaks=((_peak(dense), 1.0),),
        published_per_sm=published,
        source=(
            f"ncu {_peak(dense)} (the dense wgmma rate; {counter}.peak_sustained is the "
            "2:4-sparse rate, twice as high)"
        ),
    )


PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision(
            "fp64", "FP64",
            ((_thread_inst("dfma"), 2.0), (_thread_inst("dadd"), 1.0), (_thread_inst("dmul"), 1.0)),
            ((_peak("sm__sass_thread_inst_executed_op_dfma_pred_on"), 2.0),),
            {"9.0": 128.0, "8.0": 64.0}, "ncu DFMA peak × 2",
        ),
        Precision(
            "fp32", "FP32",
            ((_thread_inst("ffma"), 2.0), (_thread_inst("fadd"), 1.0), (_thread_inst("fmul"), 1.0)),
            ((_peak("sm__sass_thread_inst_executed_op_ffma_pred_on"), 2.0),),
            {"9.0": 256.0, "8.0": 128.0}, "ncu FFMA peak × 2",
        ),
        Precision(
            "fp16", "FP16",
            ((_thread_inst("hfma"), 4.0), (_thread_inst("hadd"), 2.0), (_thread_inst("hmul"), 2.0)),
            ((_peak("sm__sass_thread_inst_executed_op_hfma_pred_on"), 4.0),),
            {"9.0": 512.0, "8.0": 512.0}, "ncu HFMA peak × 4 (packed HFMA2)",
        ),
        _tensor("tf32_dst_fp32", "tf32",
                "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off",
                {"9.0": 2048.0, "8.0": 1024.0}),
        _tensor("fp16", "fp16", "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off",
                {"9.0": 4096.0, "8.0": 2048.0}),
        _tensor("bf16_dst_fp32", "bf16",
                "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off",
                {"9.0": 4096.0, "8.0": 2048.0}),
        _tensor("fp8", "fp8", "sm__ops_path_tensor_src_fp8_sparsity_off", {"9.0": 8192.0}),
        _tensor("int8", "int8", "sm__ops_path_tensor_op_igmma_src_int8_sparsity_off",
                {"9.0": 8192.0, "8.0": 4096.0}),
        _tensor("fp64", "fp64", "sm__ops_path_tensor_src_fp64", {"9.0": 256.0, "8.0": 128.0}),
    )
}  # fmt: skip

# What a variant computes in when it does not say (``compute:`` in its declaration).
DEFAULT_COMPUTE: dict[str, tuple[str, ...]] = {
    "float64": ("fp64",),
    "float32": ("fp32",),
    "tf32": ("tensor_tf32",),
    "float16": ("tensor_fp16",),
    "bfloat16": ("tensor_bf16",),
}


@dataclass(frozen=True)
class Level:
    """A memory level of the hierarchical roofline."""

    name: str
    label: str
    bytes: tuple[str, float]  # (ncu counter, bytes per count)
    peak: tuple[str, float]  # (per-cycle peak metric, bytes per unit)
    clock: str  # the level's clock, per second
    source: str


LEVELS: dict[str, Level] = {
    lvl.name: lvl
    for lvl in (
        Level("dram", "DRAM", ("dram__bytes.sum", 1.0), ("dram__bytes.sum.peak_sustained", 1.0),
              "dram__cycles_elapsed.avg.per_second", "dram__bytes"),
        Level("l2", "L2", ("lts__lts2xbar_cycles_active.sum", 32.0),
              ("lts__lts2xbar_cycles_active.sum.peak_sustained", 32.0),
              "lts__cycles_elapsed.avg.per_second",
              "lts__lts2xbar_cycles_active × 32 B (L2 to SM data, as ncu's hierarchical roofline)"),
        Level("l1", "L1", ("l1tex__lsu_writeback_active_mem_lgds.sum", 128.0),
              ("l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained", 128.0),
              "l1tex__cycles_elapsed.avg.per_second",
              "l1tex__lsu_writeback_active_mem_lgds × 128 B (local, global and shared data "
              "returned by L1, as ncu's hierarchical roofline on compute capability 9.0)"),
        Level("shared", "shared memory", ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 128.0),
              ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.peak_sustained", 128.0),
              "l1tex__cycles_elapsed.avg.per_second",
              "shared-memory wavefronts × 128 B: bank conflicts cost wavefronts, so this is "
              "the pipe's occupancy rather than the data moved (shared_bytes)"),
    )
}  # fmt: skip


# The levels of the hierarchical roofline, each with an arithmetic intensity (ai_<level>):
# shared memory has its bandwidth ceiling, but ncu's roofline draws no intensity for it.
ROOFLINE_LEVELS = ("dram", "l2", "l1")


@dataclass(frozen=True)
class Column:
    """A derived per-configuration column."""

    name: str
    unit: str
    reduce: str  # sum | weighted (by kernel duration) | longest (the longest kernel's value)
    needs: tuple[str, ...]
    formula: Callable[[Get], float]
    doc: str


def _sum_of(terms: tuple[tuple[str, float], ...]) -> Callable[[Get], float]:
    def formula(get: Get) -> float:
        values = [get(metric) * scale for metric, scale in terms]
        present = [v for v in values if not math.isnan(v)]
        return math.fsum(present) if present else math.nan

    return formula


def _product(*factors: tuple[str, float]) -> Callable[[Get], float]:
    def formula(get: Get) -> float:
        return math.prod(get(metric) * scale for metric, scale in factors)

    return formula


def _first(options: tuple[tuple[str, float], ...], clock: str) -> Callable[[Get], float]:
    """The first peak ncu reported, times the clock: a rate per second."""

    def formula(get: Get) -> float:
        for metric, scale in options:
            if not math.isnan(get(metric)):
                return get(metric) * scale * get(clock)
        return math.nan

    return formula


def _metric(name: str, scale: float = 1.0) -> Callable[[Get], float]:
    return lambda get: get(name) * scale


# Columns that are one ncu counter each: (name, unit, reduce, counter, scale, what it is).
_COUNTERS = [
    ("dram_read_bytes", "byte", "sum", "dram__bytes_read.sum", 1.0, "DRAM bytes read"),
    ("dram_write_bytes", "byte", "sum", "dram__bytes_write.sum", 1.0,
     "DRAM bytes written while the kernel ran"),
    ("l2_write_bytes", "byte", "sum", "lts__t_sectors_srcunit_tex_op_write.sum", 32.0,
     "bytes the SMs wrote into L2 (32-byte sectors)"),
    ("l2_tag_bytes", "byte", "sum", "lts__t_bytes.sum", 1.0, "all L2 tag traffic"),
    ("shared_bytes", "byte", "sum", "sm__sass_data_bytes_mem_shared.sum", 1.0,
     "shared-memory data loaded and stored"),
    ("sm_throughput_pct", "%", "weighted", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
     1.0, "Speed of Light: SM throughput"),
    ("memory_throughput_pct", "%", "weighted",
     "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 1.0,
     "Speed of Light: memory throughput (the busiest of DRAM, L2, L1)"),
    ("dram_throughput_pct", "%", "weighted",
     "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 1.0, "DRAM throughput"),
    ("issue_active_pct", "%", "weighted", "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
     1.0, "cycles in which a scheduler issued an instruction"),
    ("achieved_occupancy_pct", "%", "weighted",
     "sm__warps_active.avg.pct_of_peak_sustained_active", 1.0, "warps active"),
    ("theoretical_occupancy_pct", "%", "longest", "sm__maximum_warps_per_active_cycle_pct", 1.0,
     "the occupancy the launch allows"),
    ("registers_per_thread", "register", "longest", "launch__registers_per_thread", 1.0,
     "registers per thread"),
    ("waves_per_sm", "wave", "longest", "launch__waves_per_multiprocessor", 1.0,
     "blocks launched over the blocks all SMs hold at once"),
    ("occupancy_limit_registers", "block", "longest", "launch__occupancy_limit_registers", 1.0,
     "blocks per SM the registers allow"),
    ("occupancy_limit_shared_mem", "block", "longest", "launch__occupancy_limit_shared_mem", 1.0,
     "blocks per SM the shared memory allows"),
    ("occupancy_limit_warps", "block", "longest", "launch__occupancy_limit_warps", 1.0,
     "blocks per SM the warp slots allow"),
    ("occupancy_limit_blocks", "block", "longest", "launch__occupancy_limit_blocks", 1.0,
     "blocks per SM the block slots allow"),
    ("sm_clock_hz", "Hz", "longest", SM_CLOCK, 1.0, "SM clock while the kernel ran"),
    ("instructions", "instruction", "sum", "inst_executed", 1.0, "warp instructions executed"),
]  # fmt: skip


def _columns() -> list[Column]:
    """Every column: the duration, FLOPs and dense peak per precision, traffic and peak
    bandwidth per level, one counter each (_COUNTERS), and the shared memory asked for."""
    cols = [Column("ncu_time_ms", "ms", "sum", (DURATION,), _metric(DURATION, 1e-6),
                   "gpu__time_duration of the profiled launch, all its kernels")]  # fmt: skip
    for p in PRECISIONS.values():
        cols += [
            Column(f"flops_{p.name}", "FLOP", "sum", tuple(m for m, _ in p.counts),
                   _sum_of(p.counts), f"{p.label} FLOPs counted by ncu"),
            Column(f"peak_{p.name}_flops_per_s", "FLOP/s", "longest",
                   (*(m for m, _ in p.peaks), SM_CLOCK), _first(p.peaks, SM_CLOCK),
                   f"{p.label} dense peak at the kernel's SM clock: {p.source}"),
        ]  # fmt: skip
    for lvl in LEVELS.values():
        cols += [
            Column(f"{lvl.name}_bytes", "byte", "sum", (lvl.bytes[0],), _metric(*lvl.bytes),
                   f"{lvl.label} traffic: {lvl.source}"),
            Column(f"peak_{lvl.name}_bytes_per_s", "byte/s", "longest", (lvl.peak[0], lvl.clock),
                   _product(lvl.peak, (lvl.clock, 1.0)),
                   f"{lvl.label} theoretical bandwidth (ncu peak × clock)"),
        ]  # fmt: skip
    for name, unit, reduce, metric, scale, doc in _COUNTERS:
        cols.append(Column(name, unit, reduce, (metric,), _metric(metric, scale), doc))
    active = "sm__cycles_active.avg"
    cols.append(Column("sm_active_pct", "%", "weighted", (active, DURATION, SM_CLOCK),
                       lambda get: 100 * get(active) / (get(DURATION) * 1e-9 * get(SM_CLOCK)),
                       "share of the kernel's time an average SM had a warp resident"))  # fmt: skip
    static, dynamic = "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"
    cols.append(Column("shared_mem_per_block", "byte", "longest", (static, dynamic),
                       _sum_of(((static, 1.0), (dynamic, 1.0))),
                       "shared memory the kernel asked for (static + dynamic)"))  # fmt: skip
    return cols


COLUMNS: dict[str, Column] = {c.name: c for c in _columns()}

# Counters the bound rule reads besides the columns' own.
EXTRA_METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",)


# The tensor-core precisions: their FLOP counters cost replay passes (on an H100 with ncu
# 2025.3.1, 5 of the sweep's 17), where every other counter comes with the sections' passes.
TENSOR = tuple(name for name in PRECISIONS if name.startswith("tensor_"))


def tensor_counters(compute: Iterable[str], baseline: bool = False) -> tuple[str, ...]:
    """The tensor-core precisions whose FLOPs ncu counts for a variant (or a chunk of
    them), in registry order: those it computes in, or every one for a library baseline
    (the library picks its own path)."""
    return TENSOR if baseline else tuple(p for p in TENSOR if p in set(compute))


def required_metrics(tensor: Iterable[str] = TENSOR) -> list[str]:
    """Every ncu metric the registry and the bound rule read, for ``ncu --metrics``
    (sections add others), with the FLOP counters of the tensor-core precisions in
    ``tensor`` only (their peaks all the same: those cost no pass)."""
    skipped = {m for p in set(TENSOR) - set(tensor) for m, _ in PRECISIONS[p].counts}
    names = [m for c in COLUMNS.values() for m in c.needs if m not in skipped]
    for lvl in LEVELS.values():
        names.append(lvl.clock)
    return list(dict.fromkeys([*names, *EXTRA_METRICS, *breakdown_metrics()]))


def base_name(metric: str) -> str:
    """'dram__bytes.sum.peak_sustained' → 'dram__bytes' (what ncu --query-metrics lists)."""
    return metric.split(".", 1)[0]


# What ncu collects on every GPU that `ncu --query-metrics` does not list (it lists the
# GPU's counters): besides the launch's statistics and occupancy limits (launch__*), the
# theoretical occupancy the Occupancy section computes and the warp instructions executed
# as the source counters count them (each asked for alone with --metrics on an H200,
# 2026-11-28: accepted, one value per kernel).
UNLISTED = {"sm__maximum_warps_per_active_cycle_pct", "inst_executed"}


def unlisted(metric: str) -> bool:
    """Whether ncu collects ``metric`` on every GPU though its listing does not name it."""
    base = base_name(metric)
    return base.startswith("launch__") or base in UNLISTED
