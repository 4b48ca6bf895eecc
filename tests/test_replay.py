import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import (
    CAPTURE,
    CAPTURES,
    ROOT,
    measured_numbers,
    replayed,
    replayed_study,
    sources_changed,
)
from ncuflow.analyze.collect import status_line
from ncuflow.capture.folder import capture_dir, info, save_capture
from ncuflow.capture.mismatch import capture_mismatches
from ncuflow.errors import NcuflowError
from ncuflow.metrics import COLUMNS
from ncuflow.plan import Plan, read_records
from ncuflow.profile.members import Member
from ncuflow.runners.replay import ReplayRunner
from ncuflow.study.expand import config_id
from ncuflow.vocab import ENQUEUE_METHOD

NCU = info(CAPTURE)["settings"]["ncu"]  # what the capture's run asked ncu for


def _quiet(line: str) -> None:
    """The stages' log lines are not asked about here."""


def _captured(variant: str = "naive") -> tuple[Plan, dict]:
    """The plan and the timing records of one variant of the default capture."""
    folder = CAPTURE / "matmul_ladder" / variant
    return Plan.load(folder / "plan.json"), read_records(folder / "measure.json")


def _plan(sizes: list[int], variant: str = "naive") -> Plan:
    """The capture's plan of ``variant`` at the sizes ``sizes`` (one configuration each,
    with the tunables of its first), kernels read from this tree."""
    plan = _captured(variant)[0]
    first = plan.pending[0]
    sized = [{"M": s, "N": s, "K": s} for s in sizes]
    rows = [dataclasses.replace(first, dims=d, config_id=config_id(first.params, d)) for d in sized]
    return dataclasses.replace(plan.with_configs(rows), kernels_dir=str(ROOT / "kernels"))


def _replay(plan: Plan, folder: Path, tmp_path: Path) -> tuple[Path, Path]:
    runner = ReplayRunner(folder)
    measure, long = tmp_path / "measure.json", tmp_path / "ncu_long.parquet"
    (tmp_path / "plan.json").write_text(plan.to_json())
    job = Member(tmp_path / "plan.json", measure, tmp_path)
    runner.measure([job], tmp_path / "journal.jsonl", _quiet)
    runner.profile([job], tmp_path / "chunks", _quiet)
    return measure, long


def test_replay_copies_exactly_the_planned_records(tmp_path: Path) -> None:
    plan = _plan([2048, 1024])
    measure, long_out = _replay(plan, CAPTURE, tmp_path)
    records = json.loads(measure.read_text())
    captured = json.loads((CAPTURE / "matmul_ladder" / "naive" / "measure.json").read_text())
    assert list(records) == [c.config_id for c in plan.configs]
    assert all(records[c] == captured[c] for c in records)  # value for value
    long = pd.read_parquet(long_out)
    assert sorted(long["config_id"].unique()) == sorted(records)
    assert long["value"].dtype == "float64" and len(long) > 500 * len(records)
    assert json.loads((tmp_path / "device.json").read_text())["replayed_from"] == "h100-sxm"


def test_a_configuration_missing_from_the_capture_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(NcuflowError, match=r"no timing record of configuration\(s\) .*M=512_N=512"):
        _replay(_plan([1024, 512]), CAPTURE, tmp_path)


def test_missing_ncu_rows_are_an_error_too(tmp_path: Path) -> None:
    empty = tmp_path / "capture"
    shutil.copytree(CAPTURE, empty)
    (empty / "matmul_ladder" / "naive" / "ncu_long.parquet").unlink()
    with pytest.raises(NcuflowError, match="no ncu profile of configuration"):
        _replay(_plan([1024]), empty, tmp_path)


DAMAGED = ["matmul_ladder/naive/measure.json", "device.json",
           "matmul_ladder/naive/ncu_long.parquet", "capture.json"]  # fmt: skip


@pytest.mark.parametrize("damaged", DAMAGED)
def test_a_damaged_capture_file_is_named_with_what_to_do(tmp_path: Path, damaged: str) -> None:
    """A capture's file cut short: one message naming it, and restoring the capture (not
    rerunning a stage) as the fix."""
    copy = tmp_path / "capture"
    shutil.copytree(CAPTURE, copy)
    path = copy / damaged
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(NcuflowError) as error:
        info(copy)
        _replay(_plan([1024]), copy, tmp_path)
        ReplayRunner(copy).device_facts(tmp_path / "device.json", None)
    assert str(error.value).startswith(f"{path}: not"), error.value
    assert "cut short or edited: a capture's file: restore it (git checkout --" in str(error.value)


def test_a_host_variant_has_no_ncu_rows_to_replay(tmp_path: Path) -> None:
    plan = _plan([1024], "cpu_blas")
    _, long_out = _replay(plan, CAPTURE, tmp_path)
    assert pd.read_parquet(long_out).empty


def test_unknown_capture_lists_the_ones_there() -> None:
    with pytest.raises(
        NcuflowError,
        match="captures here: h100-sxm, h100-sxm-axpy, h100-sxm-classifier_layers",
    ):
        capture_dir(ROOT, "a100")


def test_a_replay_is_never_saved_as_a_capture(tmp_path: Path) -> None:
    (tmp_path / "device.json").write_text(json.dumps({"replayed_from": "h100-sxm"}))
    with pytest.raises(NcuflowError, match="holds a replay"):
        save_capture(tmp_path, tmp_path, "x", [], "cmd", NCU)


def test_a_capture_keeps_the_exact_values_and_the_gpu_table(tmp_path: Path) -> None:
    """A variant measured in two jobs (p0, p1) is one set of files in the capture."""
    results = tmp_path / "results" / "matmul_ladder"
    source = CAPTURE / "matmul_ladder" / "naive"
    plan = Plan.load(source / "plan.json")
    measured = json.loads((source / "measure.json").read_text())
    long = pd.read_parquet(source / "ncu_long.parquet")
    ids = [row.config_id for row in plan.configs]
    for part, half in (("p0", ids[:2]), ("p1", ids[2:])):
        (results / "naive" / part).mkdir(parents=True)
        rows = [row for row in plan.configs if row.config_id in half]
        (results / "naive" / part / "plan.json").write_text(plan.with_configs(rows).to_json())
        (results / "naive" / part / "measure.json").write_text(
            json.dumps({c: measured[c] for c in half})
        )
        long[long["config_id"].isin(half)].to_parquet(results / "naive" / part / "ncu_long.parquet")
    shutil.copy2(CAPTURE / "matmul_ladder" / "table.parquet", results / "table.parquet")
    shutil.copy2(CAPTURE / "device.json", results.parent / "device.json")
    run = {"wall_s": 12.5, "cores": 16, "gpus": 1, "stages": {"measure": {"jobs": 2}}}
    (results.parent / "run.json").write_text(json.dumps(run))
    jobs = [("matmul_ladder", "naive", ["p0", "p1"])]
    folder = save_capture(results.parent, tmp_path, "again", jobs, "cmd", NCU) / "matmul_ladder"
    assert (folder / "naive" / "plan.json").read_text() == (source / "plan.json").read_text()
    assert json.loads((folder / "naive" / "measure.json").read_text()) == measured
    saved = pd.read_parquet(folder / "naive" / "ncu_long.parquet")
    pd.testing.assert_frame_equal(saved, long, check_exact=True)
    assert (folder / "table.parquet").is_file()
    folder = folder.parent
    meta = json.loads((folder / "capture.json").read_text())
    assert meta["device"] == "NVIDIA H100 80GB HBM3" and meta["settings"]["ncu"] == NCU
    assert meta["run"] == run  # how long the run took, kept with it


@pytest.mark.parametrize("variant", ["naive", "stream_k"])
def test_a_replay_with_the_capture_own_settings_differs_in_nothing(variant: str) -> None:
    """The capture's own plan gives every record's fingerprint (what today's settings
    change is named in test_a_capture_timed_with_an_earlier_method_says_so)."""
    plan, measured = _captured(variant)
    assert capture_mismatches(CAPTURE, NCU, plan, measured, list(measured)) == {}


def test_other_timing_seed_and_kernels_are_named_for_every_configuration() -> None:
    plan, measured = _captured()
    changed = dataclasses.replace(plan, timing=dataclasses.replace(plan.timing, min_repeats=10),
                                  seed=7, family_fingerprint="0" * 16)  # fmt: skip
    found = capture_mismatches(CAPTURE, NCU, changed, measured, [])
    assert sorted(found) == sorted(measured) and len(set(found.values())) == 1
    why = found[next(iter(found))]
    assert "timing.min_repeats 20 in the capture, 10 here" in why
    assert "seed null in the capture, 7 here" in why  # the capture drew fresh inputs
    assert "the kernel sources of family matmul changed since the capture" in why


def test_other_ncu_settings_mark_the_profiled_configurations_only() -> None:
    plan, measured = _captured()
    ncu = {**NCU, "sections": [*NCU["sections"], "WarpStateStats"], "clock_control": "base"}
    first = next(iter(measured))
    found = capture_mismatches(CAPTURE, ncu, plan, measured, [first])
    assert list(found) == [first]
    assert 'ncu.clock_control "none" in the capture, "base" here' in found[first]
    assert '"SpeedOfLight_RooflineChart", "WarpStateStats"] here' in found[first]


def test_a_capture_that_keeps_no_plans_says_it_cannot_tell(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    shutil.copytree(CAPTURE / "matmul_ladder" / "naive", folder / "matmul_ladder" / "naive")
    (folder / "matmul_ladder" / "naive" / "plan.json").unlink()
    (folder / "capture.json").write_text(json.dumps({"name": "old", "date": "2026-11-22"}))
    plan, measured = _captured()
    assert capture_mismatches(folder, NCU, plan, measured, list(measured)) == {}  # the same
    changed = dataclasses.replace(plan, timing=dataclasses.replace(plan.timing, min_repeats=10))
    found = capture_mismatches(folder, NCU, changed, measured, list(measured))
    why = "measured with other settings or kernel sources than this config's"
    assert set(found.values()) == {f"{why} (capture old, 2026-11-22, keeps no plans)"}


def test_the_table_and_the_last_lines_say_what_differs(tmp_path: Path) -> None:
    table = replayed("h100-sxm-h100_tuning")["h100_tuning"]  # before plans were kept
    assert table["capture_mismatch"].str.contains("keeps no plans").all()
    path = tmp_path / "h100_tuning" / "table.parquet"
    path.parent.mkdir()
    table.to_parquet(path)
    lines = status_line(path).splitlines()
    assert len(lines) == 2 and lines[1].startswith(
        f"ncuflow: h100_tuning: warning: {len(table[table['status'] != 'skipped'])} "
        "configurations replayed from a capture that differs from this config: measured with"
    )


def test_every_measured_row_names_its_device() -> None:
    table = replayed("h100-sxm")["matmul_ladder"]  # each job named the GPU it held
    host = table["runs_on"] == "cpu"
    assert table.loc[~host, "device"].str.startswith("NVIDIA H100 80GB HBM3 (GPU-").all()
    assert table.loc[host, "device"].str.startswith("host: ").all()
    classifier = replayed("h100-sxm")["classifier"]
    skipped = classifier["status"] == "skipped"
    assert skipped.any() and classifier.loc[skipped, "device"].isna().all()


def test_a_run_over_two_gpus_names_each_row_s_gpu() -> None:
    """A sweep measured on both GPUs of one host at once (--resources gpu=2): each row
    names the GPU its job held, by UUID."""
    rows = pd.concat(replayed("h200-x2-gpus").values())
    on_gpu = rows[(rows["runs_on"] == "gpu") & (rows["status"] == "ok")]
    devices = set(on_gpu["device"])
    assert len(devices) == 2 and all(d.startswith("NVIDIA H200 (GPU-") for d in devices)
    assert rows.loc[rows["runs_on"] == "cpu", "device"].str.startswith("host: ").all()


def _planned_as_captured(capture: str, experiment: str) -> set[tuple[str, str]]:
    """(variant, configuration) of the rows this tree plans exactly as the capture did (the
    same counts, models, launch geometry): a kernel edited since, or its family, plans
    otherwise, and only what was measured then can be compared."""
    study = replayed_study(capture)
    same = set()
    for variant in study.experiments[experiment].variants:
        kept = CAPTURES / capture / experiment / variant / "plan.json"
        if not kept.is_file():
            continue
        captured = {r.config_id: r.to_json() for r in Plan.load(kept).configs}
        for row in study.plan(experiment, variant).configs:
            if captured.get(row.config_id) == row.to_json():
                same.add((variant, row.config_id))
    return same


@pytest.mark.parametrize(
    "capture",
    [
        "h100-sxm",
        "h200",
        "h200-x2-gpus",
        "h100-sxm-classifier_layers",
        "h100-sxm-conv_layers",
        "h100-sxm-layers",
        "h100-sxm-axpy",
    ],
)
def test_a_replay_reproduces_the_gpu_tables_value_for_value(capture: str) -> None:
    """Every measured value comes back as captured: the timing records and every column ncu
    gave, on every row; on the rows this tree plans as the capture did, every numeric column
    (analytic counts and models come from today's declarations, which may have changed
    since). Rows are matched by configuration: a GPU run in parts lists the skipped rows
    with its first part, the replay of one job per variant keeps the grid order."""
    key = ["variant", "config_id"]
    measured = ["time_ms", "time_ms_iqr", "time_cv", "time_ci95_pct", "repeats", "rel_error",
                "max_abs_error", *COLUMNS]  # fmt: skip
    for name, replayed_table in replayed(capture).items():
        table = replayed_table.sort_values(key, ignore_index=True)
        gpu = pd.read_parquet(CAPTURE.parent / capture / name / "table.parquet")
        gpu = gpu.sort_values(key, ignore_index=True)
        assert (table["status"] == gpu["status"]).all() and len(table) == len(gpu)
        assert (table[key] == gpu[key]).all().all()
        numeric = measured_numbers(gpu)
        kept = [c for c in measured if c in gpu]
        pd.testing.assert_frame_equal(table[kept], gpu[kept], check_exact=True)
        same = _planned_as_captured(capture, name)
        rows = [(v, c) in same for v, c in zip(table["variant"], table["config_id"], strict=True)]
        pd.testing.assert_frame_equal(table.loc[rows, numeric], gpu.loc[rows, numeric],
                                      check_exact=True)  # fmt: skip


def test_a_capture_timed_with_an_earlier_method_says_so() -> None:
    """Captures from before the read flush (a memset that did not always evict the inputs)
    or before the gate (launches enqueued as the host went) are named as such on every
    measured row, and nothing else is named where nothing else changed: the default
    study's capture is of the gate's method, and names only kernel sources edited since
    it was taken; the H200's is from before the gate and before stream_k's grid recorded
    the SM count it follows. Whether a family's sources changed is read from the
    fingerprints, so that editing a kernel (a comment, say) is named, not a failure."""
    flush = 'timing.l2_flush null in the capture, "read 2x L2 (ld.global.cg)" here'
    gate = f"timing.enqueue null in the capture, {json.dumps(ENQUEUE_METHOD)} here"
    grid = 'grid_facts null in the capture, {"sm_count": 132} here'

    def sources(table: pd.DataFrame) -> str:
        return f"the kernel sources of family {table['family'].iloc[0]} changed since the capture"

    for table in replayed("h100-sxm-classifier_layers").values():
        measured = table[table["status"] != "skipped"]
        assert measured["capture_mismatch"].str.contains(flush, regex=False).all()
    for name, table in replayed("h100-sxm").items():
        measured = table[table["status"] != "skipped"]
        if sources_changed("h100-sxm", name):
            assert (measured["capture_mismatch"] == sources(table)).all()
        else:
            assert table["capture_mismatch"].isna().all()
    for name, table in replayed("h200").items():
        measured = table[table["status"] != "skipped"]
        expected = pd.Series(gate, index=measured.index)
        if name == "matmul_ladder":  # a grid that follows the SM count since
            expected[measured["variant"] == "stream_k"] += f"; {grid}"
        if sources_changed("h200", name):
            expected += f"; {sources(table)}"
        assert (measured["capture_mismatch"] == expected).all()
