"""Benchmark (GPU): one ncu process for a whole sweep against one ncu process per configuration.

Profiles the 16 configurations of benchmarks/ncu_batching.yaml through the pipeline's
profile stage (one ncu process), then through a loop that starts one ncu process per
configuration, each exported to CSV as the pipeline does, and prints both wall times and
their ratio. Run from the repository root on a machine with a GPU and ncu:

    python benchmarks/ncu_batching.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from ncuflow.measure.stage import measure_stage
from ncuflow.metrics import required_metrics
from ncuflow.ncu import (
    NcuSettings,
    available_metrics,
    export_csv,
    find_ncu,
    ncu_command,
    run_ncu,
)
from ncuflow.profile.long_table import read_report, write_long
from ncuflow.profile.stage import profile_stage
from ncuflow.profile.worker import worker_command
from ncuflow.study.config import load_study


def quiet(line: str) -> None:
    """The stages' log lines are not wanted here: only the times are."""


def main() -> int:
    config = yaml.safe_load(Path(__file__).with_name("ncu_batching.yaml").read_text())
    study = load_study(config)
    ncu = find_ncu(study.config["ncu"]["path"])
    sections = study.config["ncu"]["sections"]  # the schema's defaults, as the pipeline uses
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plan, measure = work / "plan.json", work / "measure.json"
        plan.write_text(study.plan("ncu_batching", "naive").to_json())
        measure_stage(plan, measure, quiet)
        ids = [r.config_id for r in study.experiments["ncu_batching"].configs["naive"]]

        started = time.perf_counter()
        one_process = NcuSettings("ncu", tuple(sections), "none", (), chunk_size=len(ids))
        profile_stage(plan, measure, work / "one.parquet", work / "one.csv", one_process, quiet)
        batched = time.perf_counter() - started

        started = time.perf_counter()
        metrics = available_metrics(ncu, required_metrics(), quiet)
        for i, config_id in enumerate(ids):
            report = work / f"each{i}"
            run_ncu(ncu_command(ncu, report, sections, "none", metrics,
                                worker_command(plan, measure, [config_id])), quiet)  # fmt: skip
            export_csv(ncu, report.with_suffix(".ncu-rep"), work / f"each{i}.csv")
            write_long(read_report(report.with_suffix(".ncu-rep")), work / f"each{i}.parquet")
        separate = time.perf_counter() - started
    print(f"configurations: {len(ids)}")
    print(f"one ncu process for all:      {batched:7.1f} s")
    print(f"one ncu process each (loop):  {separate:7.1f} s")
    print(f"ratio: {separate / batched:.1f}x faster (target >= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
