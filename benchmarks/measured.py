"""What the GPU benchmarks share: a study's configurations measured on this machine's GPU
by ncuflow's own worker (measure.stage.measure_plan: checked, then timed as a study times
them), in this process's folder, without Snakemake, ncu or the compile stage."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.files import read_config  # noqa: E402
from ncuflow.measure.problem import Work, inputs_seed  # noqa: E402
from ncuflow.measure.stage import measure_plan  # noqa: E402
from ncuflow.plan import Plan, Record  # noqa: E402
from ncuflow.spec import load_variant  # noqa: E402
from ncuflow.study.config import load_study  # noqa: E402


def measure_study(study: Path, folder: Path,
                  log: Callable[[str], None] = print) -> list[tuple[Work, Record]]:  # fmt: skip
    """Every configuration of the study's experiments, measured: (its work, its record)."""
    loaded = load_study(read_config(study), study.parent)
    out = []
    for experiment, variant in loaded.jobs():
        plan_path = folder / experiment / variant / "plan.json"
        plan_path.parent.mkdir(parents=True)
        plan_path.write_text(loaded.plan(experiment, variant).to_json())
        measure_plan(plan_path, plan_path.with_name("measure.json"), log)
        plan = Plan.load(plan_path)
        records = json.loads(plan_path.with_name("measure.json").read_text())
        family, spec = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
        for row in plan.pending:
            work = Work(plan, family, spec, f"{variant}.p0", row, inputs_seed(plan))
            out.append((work, Record.from_json(records[row.config_id])))
    return out
