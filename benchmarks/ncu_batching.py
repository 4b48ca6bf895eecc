"""Benchmark (GPU): the profile stage's sweep tier against ncu's own floor, and against one
ncu process per configuration.

Profiles the 16 configurations of benchmarks/ncu_batching.yaml three ways and prints each
wall time: the pipeline's profile stage (sweep tier only, one ncu process: ncu, reading
the report, exporting its CSV, the rule results); the floor, one ncu process collecting
the same sections and metrics over the same launches and nothing else; and a loop that
starts one ncu process per configuration, each read and exported as the pipeline does.
The stage and the floor are each timed twice, in turn, and the best of each counts; the
metrics this GPU has (``ncu --query-metrics``, kept per machine) are asked before either.
Targets (issue 26): the stage within 1.15x of the floor, 8x faster than the loop. Run from
the repository root on a machine with a GPU and ncu:

    python benchmarks/ncu_batching.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from ncuflow.measure.stage import measure_plan
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
from ncuflow.profile.members import Batch, Member, worker_for
from ncuflow.profile.stage import profile_stage
from ncuflow.study.config import load_study

ROUNDS = 2  # the stage and the floor, each timed this many times in turn; the best counts


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
        measure_plan(plan, measure, quiet)
        ids = [r.config_id for r in study.experiments["ncu_batching"].rows("naive")]
        member = Member(plan, measure, work / "one")
        batch = Batch([member])

        def worker(only: list[str], name: str) -> list[str]:
            """The profile worker over ``only``, as the stage starts it."""
            return worker_for(batch, batch.targets(member, only), work / f"{name}.work.json")

        # what this machine's ncu knows is asked once per machine (kept in the user's
        # cache): asked here, before either is timed, as a machine's earlier runs would have
        metrics = available_metrics(ncu, required_metrics(member.tensor), quiet)  # as the stage
        one_process = NcuSettings("ncu", tuple(sections), "none", (), chunk_size=len(ids),
                                  explain="none", source="none")  # fmt: skip
        stage_s, floor_s = [], []
        for round_ in range(ROUNDS):  # taken in turn: neither pays a machine's first start alone
            started = time.perf_counter()
            profile_stage([member], work / f"chunks{round_}", one_process, quiet)
            stage_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            run_ncu(ncu_command(ncu, work / f"floor{round_}", sections, "none", metrics,
                                worker(ids, f"floor{round_}")), quiet)  # fmt: skip
            floor_s.append(time.perf_counter() - started)
        batched, floor = min(stage_s), min(floor_s)

        started = time.perf_counter()
        for i, config_id in enumerate(ids):
            report = work / f"each{i}"
            run_ncu(ncu_command(ncu, report, sections, "none", metrics,
                                worker([config_id], f"each{i}")), quiet)  # fmt: skip
            exported = export_csv(ncu, report.with_suffix(".ncu-rep"), work / f"each{i}.csv")
            write_long(read_report(report.with_suffix(".ncu-rep")), work / f"each{i}.parquet")
            exported()
        separate = time.perf_counter() - started
    print(f"configurations: {len(ids)}")
    print(
        f"the profile stage, one ncu process for all:  {batched:7.1f} s "
        f"(best of {', '.join(f'{s:.1f}' for s in stage_s)})"
    )
    print(
        f"the floor, one bare ncu process for all:     {floor:7.1f} s "
        f"(best of {', '.join(f'{s:.1f}' for s in floor_s)})"
    )
    print(f"one ncu process each (loop):                 {separate:7.1f} s")
    print(f"the stage against the floor: {batched / floor:.2f}x (target <= 1.15x)")
    print(f"the stage against the loop: {separate / batched:.1f}x faster (target >= 8x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
