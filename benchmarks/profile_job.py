"""Benchmark (GPU): where one variant's measure and profile jobs spend their time.

Takes one variant of the default study at the default study's four sizes (naive unless
named: ``python benchmarks/profile_job.py stmo``) and times, one after the other on this
GPU: the measure stage; ``ncu --query-metrics``; the profile worker alone with no
configuration (Python, CuPy and the CUDA context) and with all of them (inputs,
compilation, launches); ncu over the worker with no configuration (ncu's own start and
end) and over all of them with the sweep's sections, the explain tier's and the source
tier's; reading a report, exporting its CSV, reading its rule results and its source
lines; and the whole profile stage (at the default settings: the source tier for the
fastest where it takes least time, the explain tier for the other sizes' fastest, one ncu
process at a time); then each of the deeper
tiers' sections alone beside the sweep's, the registry's metrics alone and beside each of
the sweep's sections, and the source tier with the counters ncuflow reads of
MemoryWorkloadAnalysis_Tables in place of that section; one metric alone (what a kernel
costs ncu before any pass of substance) and the registry's metrics by unit, each alone.
Prints one line per step, with the replay passes of each ncu process. Run from the repository
root on a machine with a GPU and ncu:

    PYTHONPATH=workflow python benchmarks/profile_job.py [VARIANT]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from ncuflow.analyze.why import EXPLAIN_COUNTERS
from ncuflow.measure.stage import measure_plan
from ncuflow.metrics import required_metrics
from ncuflow.ncu import NcuSettings, available_metrics, export_csv, find_ncu, ncu_command, run_ncu
from ncuflow.profile.explain import read_findings, read_source_lines
from ncuflow.profile.long_table import read_report
from ncuflow.profile.members import Batch, Member, worker_for
from ncuflow.profile.stage import profile_stage, tier_sections
from ncuflow.study.config import load_study
from ncuflow.vocab import EXPLAIN, SOURCE, SWEEP

ROOT = Path(__file__).resolve().parents[1]
NOTHING = "no_such_configuration"  # a worker told to profile only this launches nothing


def quiet(line: str) -> None:
    """The stages' log lines are not wanted here: only the times are."""


def timed(what: str, step: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = step()
    print(f"{what:<58} {time.perf_counter() - started:7.2f} s", flush=True)
    return result


def main(variant: str) -> int:
    default = yaml.safe_load((ROOT / "config.yaml").read_text())
    ladder = default["experiments"]["matmul_ladder"]
    one = {**ladder, "variants": {variant: ladder["variants"][variant]}}
    config = {"experiments": {"job": one}}
    study = load_study(config, root=ROOT)
    settings = NcuSettings.from_config(study.config["ncu"])
    ncu = find_ncu(settings.path)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plan, measure = work / "plan.json", work / "measure.json"
        plan.write_text(study.plan("job", variant).to_json())
        ids = [r.config_id for r in study.experiments["job"].rows(variant)]
        member = Member(plan, measure, work / "profiled")
        batch = Batch([member])

        def worker(only: list[str]) -> list[str]:
            """The profile worker over ``only``, as the stage starts it."""
            return worker_for(batch, batch.targets(member, only), work / "work.json")

        print(f"{variant}: {len(ids)} configurations")
        timed("measure stage (worker: inputs, build, check, time)",
              lambda: measure_plan(plan, measure, quiet))  # fmt: skip
        metrics = timed(
            "the metrics this GPU has (ncu --query-metrics)",
            lambda: available_metrics(ncu, required_metrics(member.tensor), quiet),  # as the stage
        )
        for name, only in (("no configuration", [NOTHING]), ("every configuration", ids)):
            timed(
                f"profile worker without ncu, {name}",
                lambda only=only: subprocess.run(worker(only), check=True),
            )
        for name, tier, only in (
            ("no configuration", SWEEP, [NOTHING]),
            ("the sweep's sections, every configuration", SWEEP, ids),
            ("the explain tier's sections, every configuration", EXPLAIN, ids),
            ("the source tier's sections, every configuration", SOURCE, ids),
        ):
            sections = tier_sections(settings, tier)
            timed(
                f"ncu over the worker, {name}",
                lambda b=work / tier, s=sections, o=only: _ncu(ncu, b, s, metrics, worker(o)),
            )
        # what each of the deeper tiers' sections costs
        for section in (*settings.explain_sections, *settings.source_sections):
            with_it = (*settings.sections, section)
            timed(
                f"ncu, the sweep's sections and {section}",
                lambda s=with_it: _ncu(ncu, work / "one", s, metrics, worker(ids)),
            )
        # what the sweep's own sections cost: the registry's metrics alone, then each beside
        for section in ((), *((s,) for s in settings.sections)):
            timed(
                f"ncu, the registry's metrics and {section[0] if section else 'no section'}",
                lambda s=section: _ncu(ncu, work / "one", s, metrics, worker(ids)),
            )
        # what a kernel costs ncu before any pass of substance, and the registry's metrics
        # by unit (the Speed of Light breakdowns, sm, lts, l1tex...), each alone
        one = ["gpu__time_duration.sum"]
        timed("ncu, one metric (gpu__time_duration.sum)",
              lambda: _ncu(ncu, work / "one", (), one, worker(ids)))  # fmt: skip
        units: dict[str, list[str]] = {}
        for metric in metrics:
            unit = "sass" if "sass" in metric else metric.split("__")[0]
            units.setdefault(unit, []).append(metric)
        for unit, listed in units.items():
            timed(f"ncu, the registry's {unit} metrics alone ({len(listed)})",
                  lambda m=listed: _ncu(ncu, work / "one", (), m, worker(ids)))  # fmt: skip
        # the source tier with the counters ncuflow reads of MemoryWorkloadAnalysis_Tables
        # (analyze.why) in its place: what its tables and two rules cost beyond them
        read = [m for _, m, _ in EXPLAIN_COUNTERS if m.startswith(("l1tex", "smsp__sass"))]
        without = tuple(s for s in tier_sections(settings, SOURCE)
                        if s != "MemoryWorkloadAnalysis_Tables")  # fmt: skip
        timed(
            "ncu, the source tier's sections without the tables, their counters instead",
            lambda: _ncu(ncu, work / "one", without, [*metrics, *read], worker(ids)),
        )
        report = work / f"{SOURCE}.ncu-rep"
        timed("read the source tier's report's values", lambda: read_report(report))
        csv = work / "x.csv"
        timed("export its raw CSV (ncu --import)", lambda: export_csv(ncu, report, csv)())
        timed("read its rule results", lambda: read_findings(report, SOURCE))
        timed(
            "read its source lines",
            lambda: read_source_lines(report, lambda _: member.own_source, ROOT / "kernels"),
        )
        timed("the profile stage (as configured)",
              lambda: profile_stage([member], work / "chunks", settings, quiet))  # fmt: skip
    return 0


def _ncu(ncu: str, base: Path, sections: tuple[str, ...], metrics: list[str],
         worker: list[str]) -> None:  # fmt: skip
    """One ncu process over ``worker``; prints the replay passes it needed per kernel."""
    command = ncu_command(ncu, base, sections, "none", metrics, worker)
    lines: list[str] = []
    run_ncu(command, lines.append)
    passes = [line.rsplit("- ", 1)[1] for line in lines if line.endswith("passes")]
    print(f"  ({', '.join(dict.fromkeys(passes)) or 'no kernel'})", end=" ")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "naive"))
