"""Benchmark (GPU): ncuflow's time of each kernel against NVIDIA's nvbench (cuda-bench).

Every configuration of benchmarks/nvbench_check.yaml is measured by ncuflow's own worker
(benchmarks/measured.py: checked, then timed with the L2 flushed before every launch) and,
in the same process on inputs drawn alike, by nvbench (``cuda.bench``: its cold
measurement, which also flushes L2 before each sample). Printed
per configuration: both medians, the gap, and where it is over 2 % the likely reason
(docs/methods.md, "ncuflow and nvbench").

    pip install 'cuda-bench[cu13]'==0.3.0
    python benchmarks/nvbench_check.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from measured import ROOT, measure_study

from ncuflow.measure.build import build_launcher
from ncuflow.measure.problem import Work

STUDY = ROOT / "benchmarks" / "nvbench_check.yaml"
GAP = 0.02  # a gap over this gets its reason said
BENCHMARK = "ncuflow_row"


def nvbench_medians(works: list[Work], folder: Path) -> dict[int, tuple[float, float | None]]:
    """nvbench's median cold GPU time (ms) of each work, by its index, and its batch time
    (back-to-back launches, no flush between: the mean), where it reports one."""
    import cupy as cp
    from cuda import bench
    from cuda.bench.results import BenchmarkResult

    launchers: dict[int, Any] = {}

    def row(state: Any) -> None:
        index = state.get_int64("Row")
        if index not in launchers:
            work = works[index]
            launchers[index] = build_launcher(work.family, work.variant, work.row,
                                              work.problem(checked=False))  # fmt: skip

        def launch(handle: Any) -> None:
            with cp.cuda.ExternalStream(handle.get_stream().addressof()):
                launchers[index].launch()

        state.exec(launch)

    benchmark = bench.register(row)
    benchmark.set_name(BENCHMARK)
    benchmark.add_int64_axis("Row", list(range(len(works))))
    output = folder / "nvbench.json"
    bench.run_all_benchmarks([sys.argv[0], "--jsonbin", str(output)])
    result = BenchmarkResult.from_json(output)[BENCHMARK]
    medians = result.centers(statistics.median)
    out = {}
    for state in result:
        cold, batch = medians.get(state.name()), state.summaries.get("nv/batch/time/gpu/mean")
        if cold is not None:
            index = int(state.name().split("Row=")[1].split()[0])
            out[index] = (1e3 * float(cold), 1e3 * float(batch.value) if batch else None)
    return out


def reason(work: Work, ncuflow_ms: float, gap: float) -> str:
    """The likely reason for a gap over GAP (docs/methods.md, "ncuflow and nvbench")."""
    if ncuflow_ms < 0.02:
        return "under 20 µs: launch overhead and the flush's after-effects weigh"
    if gap < 0:
        return ("ncuflow faster: its flush leaves L2 clean, so the last writes (up to L2's "
                "size) are written back after the timed interval; nvbench's leaves L2 dirty, "
                "and its batch pays the launch before's write-back")  # fmt: skip
    if not work.variant.is_cuda:
        return "a library call: its own launches and set-up inside each timed step"
    return "ncuflow slower: not explained here; look at both runs' clocks"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ncuflow-nvbench-") as tmp:
        folder = Path(tmp)
        measured = [(w, r) for w, r in measure_study(STUDY, folder) if r.status == "ok"]
        nvbench = nvbench_medians([w for w, _ in measured], folder)
    print("| experiment | variant | configuration | ncuflow ms | nvbench cold ms | gap | "
          "nvbench batch ms | why |\n|---|---|---|---:|---:|---:|---:|---|")  # fmt: skip
    within = 0
    for index, (work, record) in enumerate(measured):
        if index not in nvbench or record.time_ms is None:
            continue
        theirs, batch = nvbench[index]
        gap = record.time_ms / theirs - 1.0
        within += abs(gap) <= GAP
        said = reason(work, record.time_ms, gap) if abs(gap) > GAP else ""
        print(
            f"| {work.plan.experiment} | {work.variant.name} | {work.row.config_id} | "
            f"{record.time_ms:.4f} | {theirs:.4f} | {100 * gap:+.1f} % | "
            f"{'–' if batch is None else f'{batch:.4f}'} | {said} |"
        )
    print(f"\n{within} of {len(measured)} within {100 * GAP:.0f} %")


if __name__ == "__main__":
    main()
