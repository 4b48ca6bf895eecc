"""Nsight Compute's Speed of Light breakdown, grouped by the unit the bound rule names.

ncu's "Memory Throughput" (``gpu__compute_memory_throughput``) is the largest of a list
of sub-metrics, each a share of its own unit's peak: DRAM cycles, L2 sectors, tag lookups,
the crossbar into and out of L2, fills and atomics, L1 wavefronts, bank reads and
writes, requests. Its "Compute (SM) Throughput" (``sm__throughput``) is likewise the
largest of the SM's pipes and issue slots. The SpeedOfLight section collects every one of
them (``.avg.pct_of_peak_sustained_elapsed``), so the bound rule reads the same numbers
ncu decides with, and names the sub-metric that decided. The L2 atomic units are read in
their ``.max`` form too (the busiest slice): where few addresses take every atomic, one
slice saturates while the average stays low.
"""

from __future__ import annotations

from dataclasses import dataclass

PCT = ".avg.pct_of_peak_sustained_elapsed"
MAX_PCT = ".max.pct_of_peak_sustained_elapsed"


@dataclass(frozen=True)
class Part:
    """One sub-metric of the breakdown: its ncu name (without the suffix) and what it is."""

    metric: str
    what: str


# Memory units, each the largest of its parts. "shared" is the shared-memory share of the L1
# data pipe: a kernel whose L1 wavefronts are mostly shared-memory ones is named shared.
MEMORY_UNITS: dict[str, tuple[Part, ...]] = {
    "dram": (
        Part("gpu__dram_throughput", "DRAM throughput"),
        Part("dram__cycles_active", "DRAM cycles active"),
        Part("fbpa__dram_sectors", "DRAM sectors"),
    ),
    "l2": (
        Part("lts__t_sectors", "L2 sectors looked up (reads, writes and atomics)"),
        Part("lts__t_tag_requests", "L2 tag lookups"),
        Part("lts__xbar2lts_cycles_active", "the crossbar into L2 (SM writes and requests)"),
        Part("lts__lts2xbar_cycles_active", "the crossbar out of L2 (data returned to SMs)"),
        Part("lts__d_sectors", "L2 data-bank sectors"),
        Part("lts__d_sectors_fill_device", "L2 fills from DRAM"),
        Part("lts__d_sectors_fill_sysmem", "L2 fills from host memory"),
        Part("lts__d_atomic_input_cycles_active", "L2 atomic units"),
        Part("lts__d_decomp_input_sectors", "L2 decompression"),
    ),
    "l1": (
        Part("l1tex__data_pipe_lsu_wavefronts", "L1 data-pipe wavefronts (loads, stores, shared)"),
        Part("l1tex__data_bank_reads", "L1 data-bank reads"),
        Part("l1tex__data_bank_writes", "L1 data-bank writes"),
        Part("l1tex__lsuin_requests", "L1 requests from the load/store unit"),
        Part("l1tex__f_wavefronts", "L1 f-stage wavefronts"),
        Part("l1tex__lsu_writeback_active", "L1 writeback to registers"),
        Part("l1tex__m_l1tex2xbar_req_cycles_active", "L1 requests to L2"),
        Part("l1tex__m_xbar2l1tex_read_sectors", "sectors returned from L2 to L1"),
        Part("l1tex__data_pipe_tex_wavefronts", "texture data-pipe wavefronts"),
        Part("l1tex__tex_writeback_active", "texture writeback"),
        Part("l1tex__texin_sm2tex_req_cycles_active", "texture requests"),
        Part("l1tex__tmain_requests", "TMA and texture requests"),
    ),
    "shared": (Part("l1tex__data_pipe_lsu_wavefronts_mem_shared", "shared-memory wavefronts"),),
}

# The SM's pipes and issue, each named as the bound rule names a compute limiter.
SM_PIPES: dict[str, tuple[Part, ...]] = {
    "fma": (
        Part("sm__pipe_fma_cycles_active", "FMA pipe (FP32 and integer multiply-add)"),
        Part("sm__pipe_fmaheavy_cycles_active", "FMA-heavy pipe"),
    ),
    "alu": (Part("sm__pipe_alu_cycles_active", "ALU pipe (integer, logic, compares)"),),
    "xu": (Part("sm__inst_executed_pipe_xu", "XU pipe (exp, sqrt, conversions, shuffles)"),),
    "lsu": (Part("sm__inst_executed_pipe_lsu", "LSU pipe (loads, stores, shuffles)"),),
    "fp64": (Part("sm__pipe_fp64_cycles_active", "FP64 pipe"),),
    "tensor": (
        Part("sm__pipe_tensor_cycles_active", "tensor pipe"),
        Part(
            "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active",
            "tensor pipe (HMMA, HGMMA, IMMA)",
        ),
        Part("sm__pipe_tensor_op_dmma_cycles_active", "tensor pipe (DMMA)"),
    ),
    "shared_pipe": (Part("sm__pipe_shared_cycles_active", "shared pipe (FP16 and tensor)"),),
    "uniform": (Part("sm__inst_executed_pipe_uniform", "uniform pipe"),),
    "adu": (Part("sm__inst_executed_pipe_adu", "ADU pipe (address divergence, branches)"),),
    "cbu": (Part("sm__inst_executed_pipe_cbu_pred_on_any", "CBU pipe (barriers, warp sync)"),),
    "tma": (Part("sm__pipe_tma_cycles_active", "TMA unit"),),
    "mio": (
        Part("sm__mio_inst_issued", "MIO instruction issue"),
        Part("sm__mio_pq_read_cycles_active", "MIO read queue"),
        Part("sm__mio_pq_write_cycles_active", "MIO write queue"),
        Part("sm__mio2rf_writeback_active", "MIO writeback to registers"),
    ),
    "issue": (
        Part("sm__inst_executed", "instructions executed"),
        Part("sm__issue_active", "issue slots"),
    ),
}

# What atomic contention shows as: the L2 atomic units of the busiest slice.
ATOMIC_PART = "lts__d_atomic_input_cycles_active"


def breakdown_metrics() -> list[str]:
    """Every sub-metric the bound rule reads (the SpeedOfLight section collects them; the
    profile asks for them too, so that a run without that section still has them)."""
    names = [p.metric + PCT for unit in (*MEMORY_UNITS.values(), *SM_PIPES.values()) for p in unit]
    names.append(ATOMIC_PART + MAX_PCT)
    return list(dict.fromkeys(names))


def part_of(metric: str) -> Part:
    """The part a sub-metric name (without its suffix) belongs to."""
    for unit in (*MEMORY_UNITS.values(), *SM_PIPES.values()):
        for part in unit:
            if part.metric == metric:
                return part
    raise KeyError(metric)
