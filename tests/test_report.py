"""The report a user hands in, on the CPU: figures (each drawn or replaced by a note), the
seeds' tables, the comparison of two runs, and the Python entry points."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuflow
from conftest import CAPTURES, ROOT, replayed
from ncuflow.report.compare import run as compare_runs
from ncuflow.report.compare import traffic_verdict
from ncuflow.report.figures import FIGURES, draw
from ncuflow.report.style import Styles, near_sizes, prefixed, size_ticks
from ncuflow.report.summary import markdown, summarize
from ncuflow.spec import load_family
from ncuflow.vocab import STANDARD_FIGURES

MATMUL = load_family(ROOT / "kernels", "matmul")
DEVICE = {"name": "NVIDIA H100 80GB HBM3", "date": "2026-11-23", "replayed_from": "h100-sxm"}


@pytest.fixture(scope="module")
def ladder() -> pd.DataFrame:
    return replayed("h100-sxm")["matmul_ladder"]


def test_a_batch_beside_the_size_axis_gets_its_own_panels(tmp_path: Path) -> None:
    """B varies at each Ni: a panel per (precision, B), never a best that hides B; past
    six panels, the best over B, and the title says so."""
    family = load_family(ROOT / "kernels", "classifier")
    layers = replayed("h100-sxm")["classifier"]
    for folder in ("layers", "batches"):
        (tmp_path / folder).mkdir()
    draw(layers, family, DEVICE, tmp_path / "layers", ["performance"])
    svg = (tmp_path / "layers" / "performance.svg").read_text()
    for panel in ("float32, B = 1", "float32, B = 16", "float16, B = 16"):
        assert panel in svg
    assert "best over" not in svg
    batches = replayed("h100-sxm-classifier_layers")["classifier_tensor_batch"]  # 5 B × 2
    draw(batches, family, DEVICE, tmp_path / "batches", ["performance"])
    svg = (tmp_path / "batches" / "performance.svg").read_text()
    assert "per Ni (best over B)" in svg and "B = 16" not in svg


def test_an_experiment_with_nothing_to_draw_gets_notes(
    tmp_path: Path, ladder: pd.DataFrame
) -> None:
    failed = ladder.assign(status="wrong_result")
    draw(failed, MATMUL, DEVICE, tmp_path, list(FIGURES))
    for figure in STANDARD_FIGURES:
        assert "not drawn: " in (tmp_path / f"{figure}.svg").read_text()


def test_a_sweep_is_drawn_with_its_best_marked(tmp_path: Path) -> None:
    table = replayed("h100-sxm-coarsening")["coarsening"]
    draw(table, MATMUL, DEVICE, tmp_path, ["sweep"])
    svg = (tmp_path / "sweep.svg").read_text()
    assert "stmo, M = 64" in svg and "OP_PER_THREAD" in svg and "best ★" in svg


def test_styles_keep_one_colour_per_variant_and_grey_baselines(ladder: pd.DataFrame) -> None:
    styles = Styles(ladder, MATMUL)
    assert styles.order[:3] == ["naive", "coalesced_a", "smem_tiled"]
    own = [styles.style[v]["color"] for v in styles.order if v not in styles.baselines]
    assert len(set(own)) == len(own)
    assert styles.baselines == ["cublas_fp32", "cublas_tf32", "cublas_fp16", "cpu_blas"]
    assert all(styles.style[v]["ls"] == "--" and styles.style[v]["label"].endswith("(library)")
               for v in styles.baselines)  # fmt: skip


def test_units_take_the_prefix_of_the_data() -> None:
    assert prefixed([2e12, 5e13], "FLOP/s") == (1e12, "TFLOP/s")
    assert prefixed([3e9], "B/s") == (1e9, "GB/s")
    assert prefixed([0.5], "B") == (1.0, "B")


def test_a_size_next_to_another_keeps_its_tick_not_its_label() -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_xscale("log", base=2)
    size_ticks(ax, pd.Series([1024, 2048, 2049, 4096]))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1024", "2048", "", "4096"]
    plt.close(fig)
    assert near_sizes(pd.Series([4096, 2049, 1024, 2048, 2050])) == [2049.0, 2050.0]


def test_the_summary_is_the_seeds_table(ladder: pd.DataFrame) -> None:
    summary = summarize(ladder, MATMUL)
    at = summary[(summary["M"] == 4096)].set_index("variant")
    measured = ladder[(ladder["status"] == "ok") & (ladder["M"] == 4096)]
    fastest_ms = measured.groupby("variant")["time_ms"].min()
    for variant in ("warptile", "stream_k"):  # each against cuBLAS's fastest, in time
        percent = 100 * fastest_ms["cublas_fp32"] / fastest_ms[variant]
        assert at.loc[variant, "pct_of_library"] == pytest.approx(percent)
    assert 85 < at.loc["warptile", "pct_of_library"] < at.loc["stream_k", "pct_of_library"]
    assert at.loc["warptile", "library"] == "cublas_fp32"
    assert at.loc["wmma_fp16_pipelined", "library"] == "cublas_fp16"
    naive = at.loc["naive", "time_ms"]
    assert at.loc["warptile", "speedup"] == pytest.approx(naive / at.loc["warptile", "time_ms"])
    assert at.loc["warptile", "unit"] == "TFLOP/s" and at.loc["warptile", "throughput"] > 40
    text = markdown(summary, MATMUL, "matmul_ladder")
    assert "M = 4096, N = 4096, K = 4096" in text and "| warptile | BM=128" in text


def test_a_wrong_result_never_wins_best() -> None:
    table = replayed("h100-sxm-coarsening")["coarsening"].copy()
    stmo = table[(table["variant"] == "stmo") & (table["M"] == 2048)]
    fastest = stmo["gflops"].astype(float).idxmax()
    table.loc[fastest, "status"] = "wrong_result"
    row = summarize(table, MATMUL).set_index(["M", "variant"]).loc[(2048, "stmo")]
    assert row["parameters"] != _params(table.loc[fastest]) and row["failed"] == 1
    assert row["configurations"] == len(stmo)


def _params(row: pd.Series) -> str:
    return ", ".join(f"{p}={int(row[p])}" for p in MATMUL.variants["stmo"].params)


def test_two_runs_compared_configuration_by_configuration(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for side in (a, b):
        (side / "matmul_ladder").mkdir(parents=True)
    source = CAPTURES / "h100-sxm"
    table = pd.read_parquet(source / "matmul_ladder" / "table.parquet")
    table.to_parquet(a / "matmul_ladder" / "table.parquet")
    changed = table.copy()
    warptile = changed["variant"] == "warptile"
    changed.loc[warptile, "time_ms"] /= 2
    changed.loc[warptile, "dram_bytes"] *= 3
    changed = changed[changed["config_id"] != table["config_id"].iloc[0]]  # one only in A
    changed.to_parquet(b / "matmul_ladder" / "table.parquet")
    shutil.copy2(source / "device.json", b / "device.json")
    paths, failing = compare_runs(a, b, tmp_path / "out")
    assert [p.name for p in paths] == ["compare.csv", "compare.md", "gate.md", "compare.png",
                                       "compare.svg"]  # fmt: skip
    assert failing == {}  # nothing to fail on was asked
    rows = pd.read_csv(tmp_path / "out" / "compare.csv")
    assert len(rows) == (table["status"] == "ok").sum() - 1  # measured rows: none skipped
    mine = rows[rows["variant"] == "warptile"]
    assert np.allclose(mine["speedup"], 2.0) and (mine["moved_most"] == "dram_bytes").all()
    assert rows.loc[rows["variant"] != "warptile", "moved_most"].isna().all()  # nothing moved
    text = (tmp_path / "out" / "compare.md").read_text()
    # no timed repeats on either side here: no verdict can be told
    assert (
        "| matmul_ladder | warptile | 24 | 2.000 | 2.000 | 2.000 | 24 AMBIGUOUS | dram_bytes (3×) |"
        in text
    )
    info = json.loads((CAPTURES / "h100-sxm" / "capture.json").read_text())
    assert f"b ({info['device']}, {info['date']}) against a" in text
    assert "1 configurations only in a" in text


def test_load_reads_every_experiment_and_every_metric() -> None:
    assert set(ncuflow.__all__) == {"__version__", "compare", "load", "run", "tables"}
    table = ncuflow.load(CAPTURES / "h100-sxm")
    assert len(table) == 224 and set(table["experiment"]) == {"matmul_ladder", "classifier", "conv"}
    long = ncuflow.load(CAPTURES / "h100-sxm", metrics=True)
    assert list(long.columns[:3]) == ["experiment", "variant", "config_id"]
    assert set(long["variant"]) == set(table.loc[table["runs_on"] == "gpu", "variant"])
    with pytest.raises(ncuflow.errors.NcuflowError, match=r"holds no <experiment>/table\.parquet"):
        ncuflow.load(ROOT / "kernels")


def test_the_console_script_says_its_version_and_compares() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ncuflow", "--version"], capture_output=True, text=True
    )
    assert proc.stdout.strip() == f"ncuflow {ncuflow.__version__}"
    command = [sys.executable, "-m", "ncuflow", "compare", "--help"]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert "results folder or capture" in proc.stdout


def test_a_difference_is_called_real_only_where_the_repeats_show_it() -> None:
    from ncuflow.report.compare import AMBIGUOUS, FASTER, SAME, SLOWER, verdict

    rng = np.random.default_rng(1)
    steady = list(1.0 + 0.002 * rng.standard_normal(30))
    noisy = list(1.0 + 0.2 * rng.standard_normal(30))
    assert verdict(steady, [t * 1.005 for t in steady])[0] == SAME  # 0.5 %: no change
    assert verdict(steady, [t / 1.10 for t in steady])[0] == FASTER  # B 10 % faster
    assert verdict(steady, [t * 1.10 for t in steady])[0] == SLOWER
    assert verdict(noisy, [t / 1.03 for t in noisy])[0] == AMBIGUOUS  # 3 % in 20 % noise
    assert verdict(steady[:2], steady[:2])[0] == AMBIGUOUS  # too few repeats to tell
    _, low, high = verdict(steady, [t / 1.10 for t in steady])
    assert 1.08 < low <= 1.10 <= high < 1.12


def test_two_captures_compared_carry_a_verdict_on_every_configuration(tmp_path: Path) -> None:
    compare_runs(CAPTURES / "h100-sxm", CAPTURES / "h200", tmp_path)
    rows = pd.read_csv(tmp_path / "compare.csv")
    assert set(rows["verdict"]) <= {"SAME", "FASTER", "SLOWER", "AMBIGUOUS"} and len(rows) > 100
    # the host BLAS runs on two different CPUs: that shows as a real change, not noise
    assert (rows.loc[rows["variant"] == "cpu_blas", "verdict"] != "AMBIGUOUS").all()
    assert "| verdicts |" in (tmp_path / "compare.md").read_text()
    # the host BLAS has its own panel: another CPU's factor does not set the GPU's scale
    svg = (tmp_path / "compare.svg").read_text()
    assert "GPU variants" in svg and "host variants" in svg and "median" in svg
    # traffic has a verdict per level; the H200 side was timed before the gate existed
    gpu = rows[rows["variant"] != "cpu_blas"]
    for level in ("dram_bytes", "l2_bytes", "l1_bytes"):
        assert set(gpu[f"{level}_verdict"]) <= {"SAME", "LESS", "MORE"}, level
        ratio = gpu[f"{level}_ratio"]
        assert (gpu.loc[ratio < 0.95, f"{level}_verdict"] == "LESS").all()
        assert (gpu.loc[(ratio - 1).abs() <= 0.05, f"{level}_verdict"] == "SAME").all()
    text = (tmp_path / "compare.md").read_text()
    assert "| experiment | variant | dram_bytes | l2_bytes | l1_bytes |" in text
    assert "2026-11-24): timed with the method before 2026-11-25" in text
    assert "h100-sxm (NVIDIA H100 80GB HBM3, 2026-11-26): timed" not in text


def test_a_traffic_verdict_needs_a_change_over_five_percent() -> None:
    assert traffic_verdict(100.0, 104.0) == "SAME"
    assert traffic_verdict(100.0, 94.0) == "LESS"
    assert traffic_verdict(100.0, 106.0) == "MORE"
    assert traffic_verdict(float("nan"), 100.0) == "AMBIGUOUS"
