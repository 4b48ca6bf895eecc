"""Configurations of one problem share its inputs and reference, whatever their variant: a
worker draws each problem once (measure.problem.by_problem). On the CPU, with the axpy
family's variants planned and its host variant measured for real."""

import json
from pathlib import Path

from conftest import ROOT
from ncuflow.measure.problem import Work, by_problem
from ncuflow.measure.stage import measure_stage
from ncuflow.plan import Job
from ncuflow.spec import load_variant
from ncuflow.study.config import load_study


def _study(seed: int | None = 5) -> dict:
    variants = {"numpy_axpy": None, "naive": None, "grid_stride": None}
    return {"kernels_dir": str(ROOT / "kernels"), "seed": seed,
            "timing": {"min_repeats": 6, "max_repeats": 30, "budget_s": 0.2},
            "experiments": {"axpy": {"family": "axpy", "sizes": {"n": [1000, 4099]},
                                     "scalars": {"a": [2.0, -0.5]},
                                     "variants": variants}}}  # fmt: skip


def _works(variant: str, seed: int, member: str = "") -> list[Work]:
    plan = load_study(_study()).plan("axpy", variant)
    family, spec = load_variant(ROOT / "kernels", "axpy", variant)
    return [Work(plan, family, spec, member or f"{variant}.p0", row, seed)
            for row in plan.pending]  # fmt: skip


def test_variants_of_one_problem_share_it_and_nothing_else_does() -> None:
    naive, grid_stride = _works("naive", 5), _works("grid_stride", 5)
    groups = list(by_problem([*naive, *grid_stride]))
    # two sizes and two values of the scalar: four problems, each with both variants
    assert len(groups) == 4
    assert all({w.variant.name for w in g} == {"naive", "grid_stride"} for g in groups)
    assert [g[0].row.config_id for g in groups] == [w.row.config_id for w in naive]
    # another seed draws other values; a host variant keeps its inputs on the host
    assert len(list(by_problem([*naive, *_works("grid_stride", 6)]))) == 8
    assert len(list(by_problem([*naive, *_works("numpy_axpy", 5)]))) == 8


def test_a_worker_draws_each_problem_once_for_all_its_plans(tmp_path: Path) -> None:
    plan = load_study(_study(seed=None)).plan("axpy", "numpy_axpy")
    jobs = []
    for part in ("p0", "p1"):  # two measure jobs of one batch, with the same problems
        (tmp_path / part).mkdir()
        (tmp_path / part / "plan.json").write_text(plan.to_json())
        jobs.append(Job(tmp_path / part / "plan.json", tmp_path / part / "measure.json",
                        tmp_path / part, part))  # fmt: skip
    lines: list[str] = []
    measure_stage(jobs, tmp_path / "journal.jsonl", lines.append)
    records = [r for job in jobs for r in json.loads(job.measure_path.read_text()).values()]
    assert len(records) == 8 and all(r["status"] == "ok" for r in records)
    # no seed in the config: the worker drew one, for both jobs
    assert len({r["seed"] for r in records}) == 1
    drawn = [line for line in lines if line.startswith("numpy_axpy") and "inputs" in line]
    assert len(drawn) == 4, lines
