"""Search (experiments.<name>.search): the space a sampler sees maps onto the grid, rounds
propose what was never measured and never what cannot run, the same seed proposes the same,
the budget holds, ncu.profile chooses the fastest, and a search's study replays from its
capture exactly, and proposes a lost round again the same."""

import functools
import json
import random
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import CAPTURES, ROOT, minimal_config, run_snakemake, workflow_copy_into
from ncuflow.errors import ConfigError
from ncuflow.plan import ConfigRow, Record, profile_choice
from ncuflow.profile.members import Member, choose
from ncuflow.search.simulate import captured, simulate
from ncuflow.search.space import Point, least_time_ms
from ncuflow.search.stage import plan_round, search_stage, spaces_of
from ncuflow.study.config import Experiment, Study, load_study
from ncuflow.study.rounds import Rounds, SearchSettings, every_proposal

CAPTURE = "h200-regtile_search"
SPACE = {"BM": [16, 32, 64, 128, 256, 512], "BN": [16, 32, 64, 128, 256, 512],
         "BK": [4, 8, 16, 32, 64], "TM": [4, 8, 16], "TN": [4, 8, 16]}  # fmt: skip


def _study(search: dict | None = None, variants: dict | None = None) -> Study:
    config = minimal_config(sizes={"M": [1024, 2048], "N": "M", "K": "M"},
                            variants=variants or {"regtile_2d": {"params": SPACE}},
                            **({"search": search} if search else {}))  # fmt: skip
    return load_study(config)


def _experiment(search: dict | None = None, variants: dict | None = None) -> Experiment:
    return _study(search, variants).experiments["sq"]


def _position(experiment: Experiment, row: ConfigRow) -> int:
    """A measured row's position in its variant's grid."""
    grid = experiment.grids[row.variant]
    return spaces_of(experiment.grids)[grid.problems.index((row.dims, row.scalars or {}))
                                        ].point_of(row)[0].position  # fmt: skip


@functools.cache
def _captured() -> tuple[dict, dict]:
    return captured(CAPTURES / CAPTURE, "regtile_space")


def test_each_position_of_the_space_is_the_grids_row_there() -> None:
    grid = _experiment().grids["regtile_2d"]
    spaces = spaces_of({"regtile_2d": grid})
    for position in random.Random(0).sample(range(grid.size), 60):
        row = grid.row_at(position)
        assert row == grid.rows(position, position + 1)[0]
        point, values = spaces[position % 2].point_of(row)
        assert point == Point("regtile_2d", position) and set(values) == set(SPACE)


def test_a_round_is_proposed_again_the_same_from_the_same_times() -> None:
    """A round follows from the seed, the times it is told and the proposals in flight:
    proposed again after a stop (the round's file lost), it is the same; another seed
    proposes otherwise. Rounds overlap: round 2 is told round 0's times while round 1's
    proposals are measured, and proposes none of them again."""
    experiment = _experiment()
    records, ceilings = _captured()
    compute = {"regtile_2d": ("fp32",)}
    settings = SearchSettings(strategy="tpe", budget=60, batch=20, jobs_per_round=2, seed=3)
    measured, _ = simulate(experiment, settings, records, ceilings)
    told = [(row, t) for row, t in measured if row.search_round == 0]
    flying = [Point("regtile_2d", _position(experiment, row)) for row, _ in measured
              if row.search_round == 1]  # fmt: skip

    def round_three(settings: SearchSettings) -> dict:  # the third round, round 2
        return plan_round(spaces_of(experiment.grids), settings, 2, told, ceilings, compute,
                          0.0, flying)  # fmt: skip

    again = round_three(settings)
    assert again == round_three(settings)
    proposed = [p for parts in again["parts"].values() for ps in parts.values() for p in ps]
    then = [_position(experiment, row) for row, _ in measured if row.search_round == 2]
    assert sorted(proposed) == sorted(then)  # what the search measured in its round 2
    assert not set(proposed) & {point.position for point in flying}
    assert [p["in_flight"] for p in again["problems"]] == [20, 20]
    assert round_three(replace(settings, seed=4))["parts"] != again["parts"]


def test_a_round_takes_the_round_before_from_its_file_as_in_flight(tmp_path: Path) -> None:
    """Rule search's own code, files in and out: round 1 of an overlapping search, told
    nothing yet and given round 0's file, proposes none of round 0's configurations."""
    study = _study(search={"strategy": "tpe", "budget": 40, "batch": 20})
    plans = [Path(study.plan_file("sq", "regtile_2d", tmp_path / "plans"))]
    ceilings = tmp_path / "ceilings.json"
    ceilings.write_text(json.dumps(_captured()[1]))
    settings = study.experiments["sq"].search
    rounds = [tmp_path / f"round{r}.json" for r in (0, 1)]
    search_stage(settings, 0, plans, [], ceilings, rounds[0], print)
    search_stage(settings, 1, plans, [], ceilings, rounds[1], print, first=rounds[0],
                 in_flight=rounds[0])  # fmt: skip
    before, after = (set(every_proposal(path)) for path in rounds)
    assert len(before) == len(after) == 40 and not before & after
    problems = json.loads(rounds[1].read_text())["problems"]
    assert [(p["measured"], p["in_flight"]) for p in problems] == [(0, 20), (0, 20)]


def test_overlapping_rounds_read_the_times_of_all_but_the_round_before() -> None:
    """What rule search reads: round r the times of the rounds before r - 1 and round
    r - 1's proposals; without overlap, every round before and nothing in flight."""
    settings = SearchSettings(strategy="tpe", budget=60, batch=20, jobs_per_round=2)
    rounds = Rounds("e", ("v",), settings)
    assert rounds.earlier(1) == [] and rounds.in_flight(1) == [rounds.file(0)]
    assert rounds.earlier(2) == [f"results/e/v/p{i}/{name}" for i in (0, 1)
                                 for name in ("plan.json", "measure.json")]  # fmt: skip
    waits = Rounds("e", ("v",), replace(settings, overlap=False))
    assert waits.earlier(2) == rounds.earlier(3) and waits.in_flight(2) == []
    # a round file from before rounds could overlap did not
    assert SearchSettings.from_round({"strategy": "tpe"}).overlap is False


@pytest.mark.parametrize("strategy", ["random", "tpe"])
def test_a_search_measures_its_budget_once_each_and_only_what_can_run(strategy: str) -> None:
    experiment = _experiment()
    records, ceilings = _captured()
    settings = SearchSettings(strategy=strategy, budget=30, batch=15, jobs_per_round=2, seed=1)
    measured, skipped = simulate(experiment, settings, records, ceilings)
    ids = [row.config_id for row, _ in measured]
    assert len(ids) == len(set(ids)) == 2 * 30  # two sizes, no configuration twice
    assert all(row.pending for row, _ in measured)  # none a restriction or limit rules out
    assert skipped["ruled out"] > 0  # proposed, then told pruned: never measured
    assert [row.search_round for row, _ in measured] == sorted(r.search_round for r, _ in measured)


def test_a_space_smaller_than_the_budget_is_measured_once_and_the_rounds_end() -> None:
    variants = {"stmvb": {"params": {"BLOCK_SIZE": [8, 16, 24], "PARALLEL": [2, 4, 8]}}}
    experiment = _experiment(variants=variants)
    runnable = {(r.variant, r.config_id) for r in experiment.grids["stmvb"].rows() if r.pending}
    records = {key: Record("ok", time_ms=1.0 + i) for i, key in enumerate(sorted(runnable))}
    settings = SearchSettings(strategy="tpe", budget=40, batch=4, seed=0)
    measured, _ = simulate(experiment, settings, records, {})
    assert sorted((r.variant, r.config_id) for r, _ in measured) == sorted(runnable)


def test_roofline_pruning_skips_what_its_model_says_cannot_beat_the_best() -> None:
    row = _experiment().grids["regtile_2d"].row_at(0)  # BM=BN=16: much modelled traffic
    ceilings = {"fp32": {"value": 60e12}, "dram": {"value": 4e12}}
    least = least_time_ms(row, ("fp32",), ceilings)
    flops = row.executed_flops or row.flops
    assert least == pytest.approx(1e3 * max(flops / 60e12, row.model_dram_bytes / 4e12) / 1.1)
    assert least_time_ms(row, ("fp32",), {}) == 0.0  # no ceilings: nothing skipped
    records, measured_ceilings = _captured()
    settings = SearchSettings(strategy="tpe", budget=60, batch=20, seed=0)
    kept, skipped = simulate(_experiment(), settings, records, measured_ceilings)
    assert skipped["roofline"] > 0 and len(kept) == 120  # skipped: never counted


def test_ncu_profile_keeps_the_fastest_per_group_ties_by_id() -> None:
    timed = [("a", "x", 3.0), ("a", "y", 1.0), ("a", "z", 1.0), ("b", "w", 5.0)]
    assert profile_choice("all", timed) is None
    assert profile_choice("best", timed) == {"y", "w"}
    assert profile_choice("top:2", timed) == {"y", "z", "w"}


def test_the_profile_stage_chooses_over_all_parts_of_a_variant(tmp_path: Path) -> None:
    """A search's rounds are parts of one variant: its K fastest per size are chosen among
    all of them, not K in each."""
    experiment = _experiment(search={"strategy": "random", "budget": 8, "batch": 4})
    grid, members = experiment.grids["regtile_2d"], []
    records, _ = _captured()
    rows = [grid.row_at(p) for p in range(grid.size)]
    rows = [r for r in rows if r.pending and r.dims["M"] == 1024][:12]
    header = load_study(minimal_config(variants={"regtile_2d": {"params": SPACE}})).plan(
        "sq", "regtile_2d", "p0")  # fmt: skip
    for i in range(3):
        part = tmp_path / f"p{i}"
        part.mkdir()
        (part / "plan.json").write_text(header.with_configs(rows[4 * i : 4 * i + 4]).to_json())
        taken = {r.config_id: records[("regtile_2d", r.config_id)].to_json()
                 for r in rows[4 * i : 4 * i + 4]}  # fmt: skip
        (part / "measure.json").write_text(json.dumps(taken))
        members.append(Member(part / "plan.json", part / "measure.json", part, f"p{i}"))
    chosen = [c for m in choose(members, "top:3") for c in m.ids]
    times = sorted((records[("regtile_2d", r.config_id)].time_ms, r.config_id) for r in rows)
    assert sorted(chosen) == sorted(c for _, c in times[:3])


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"search": {"strategy": "annealing"}}, "experiments.sq.search.strategy"),
        ({"search": {"budget": 0}}, "experiments.sq.search.budget"),
        ({"search": {"batches": 4}}, "experiments.sq.search"),
    ],
)
def test_a_wrong_search_section_is_refused_naming_its_key(section: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_study(minimal_config(**section))


def test_a_spent_time_budget_proposes_nothing() -> None:
    experiment = _experiment()
    settings = SearchSettings(strategy="random", budget=40, batch=20, budget_s=60.0)
    spaces, compute = spaces_of(experiment.grids), {"regtile_2d": ("fp32",)}
    within = plan_round(spaces, settings, 0, [], {}, compute, spent_s=59.0)
    after = plan_round(spaces, settings, 0, [], {}, compute, spent_s=61.0)
    assert sum(p["proposed"] for p in within["problems"]) == 40
    assert sum(p["proposed"] for p in after["problems"]) == 0
    assert all(not shard for shard in after["parts"].values())


def test_a_wrong_ncu_profile_is_refused() -> None:
    config = minimal_config()
    config["ncu"] = {"profile": "top:0"}
    with pytest.raises(ConfigError, match=r"ncu\.profile"):
        load_study(config)


def test_a_search_replays_from_its_capture_as_the_gpu_ran_it(tmp_path: Path) -> None:
    """The capture's search replayed on a CPU: each round as the GPU run proposed it (a
    sampler's last bits differ between machines), every record and every profile of the
    3 fastest per size there; the search's figure and summary section made."""
    folder = workflow_copy_into(tmp_path / "workflow")
    config = yaml.safe_load((ROOT / "experiments" / "regtile_search.yaml").read_text())
    del config["experiments"]["regtile_space"]
    (folder / "search.yaml").write_text(yaml.safe_dump(config))
    results = folder / "results" / "regtile_search"
    targets = [f"results/regtile_search/{name}" for name in ("summary.md", "search_progress.png")]
    proc = run_snakemake(folder, *targets,
                         "--cores", "2", "--configfile", "search.yaml", "--config",
                         "mode=replay")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pd.read_parquet(results / "table.parquet")
    gpu = pd.read_parquet(CAPTURES / CAPTURE / "regtile_search" / "table.parquet")
    assert sorted(table["config_id"]) == sorted(gpu["config_id"])
    assert (table["search_round"].value_counts() == 40).all()  # 20 per size and round
    assert table["sm_throughput_pct"].notna().sum() == 6  # top:3 of each size
    unchosen = table["bound_reason"].str.startswith("not profiled: ncu.profile top:3")
    assert unchosen.sum() == 234 and (table.loc[unchosen, "error"] == "").all()
    assert "## The search" in (results / "summary.md").read_text()
    assert (results / "search_progress.png").is_file()
