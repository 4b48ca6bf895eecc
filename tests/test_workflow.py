"""The whole workflow through Snakemake in a temporary copy, replaying the H100 capture."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import ncuflow
from conftest import (
    CAPTURES,
    REPLAYS,
    ROOT,
    changed_sources_line,
    measured_numbers,
    replayed,
    replayed_once,
    run_snakemake,
)
from ncuflow.gpu import cuda_device
from ncuflow.vocab import STANDARD_FIGURES

# Snakemake's last progress line: "<done> of <all> steps (100%) done"
ALL_DONE = re.compile(r"(\d+) of (\d+) steps \(100%\) done")
REQUIRED = [
    "experiment", "family", "variant", "config_id", "dtype", "M", "N", "K", "BLOCK_X",
    "BLOCK_Y", "TILE", "status", "error", "rel_error", "time_ms", "time_ms_iqr", "time_cv",
    "repeats", "flops", "gflops", "ncu_time_ms", "flops_counted", "dram_bytes", "ai_dram",
    "sm_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct",
    "theoretical_occupancy_pct", "registers_per_thread", "shared_mem_per_block", "bound",
]  # fmt: skip


def _write_config(folder: Path, experiments: dict, **top: object) -> None:
    (folder / "config.yaml").write_text(yaml.safe_dump({**top, "experiments": experiments}))


def test_replay_produces_the_table_and_figures(workflow_copy: Path) -> None:
    proc = run_snakemake(workflow_copy, "--cores", "2", "--config", "mode=replay")
    assert proc.returncode == 0, proc.stderr[-3000:]
    announced = [line for line in proc.stderr.splitlines() if line.startswith("ncuflow: mode")]
    assert len(announced) == 1
    info = json.loads((CAPTURES / "h100-sxm" / "capture.json").read_text())
    assert f"replaying capture h100-sxm ({info['device']}, {info['date']})" in announced[0]
    # the terminal shows progress, not the scheduler's lines (those stay in the log file)
    printed = (proc.stdout + proc.stderr).splitlines()
    finished = [m for m in map(ALL_DONE.fullmatch, printed) if m and m[1] == m[2]]
    assert finished and "Select jobs to execute..." not in printed
    steps = int(finished[-1][1])  # as many as the config's batches make
    assert len(printed) < 4 * steps  # a few lines per step: progress, not the scheduler's lines
    results = workflow_copy / "results" / "matmul_ladder"
    table = pd.read_parquet(results / "table.parquet")
    assert table.columns[:8].tolist() == REQUIRED[:8]  # leading columns, then M, N, K
    assert set(REQUIRED) <= set(table.columns)
    # warptile's grid: six shapes pass its restrictions at each size, ten are skipped;
    # stream_k's: three pass, one is skipped
    skipped = table["status"] == "skipped"
    assert table.loc[skipped, "variant"].value_counts().to_dict() == {"warptile": 40,
                                                                      "stream_k": 4}  # fmt: skip
    assert len(table) == 176 and (table.loc[~skipped, "status"] == "ok").all()
    tolerance = {"float32": 1e-5, "tf32": 5e-3, "float16": 1e-3}
    measured = table[~skipped]
    assert (measured["rel_error"] < measured["dtype"].map(tolerance)).all()
    assert not table.duplicated(["variant", "config_id"]).any()
    cublas = table[(table["variant"] == "cublas_fp32") & (table["M"] == 4096)].iloc[0]
    assert cublas["gflops"] == pytest.approx(2 * 4096**3 / cublas["time_ms"] / 1e6)
    assert 40_000 < cublas["gflops"] < 67_000  # H100 SXM FP32: below its 67 TFLOP/s peak
    on_gpu = table["runs_on"] == "gpu"
    bounds = set(table.loc[on_gpu & ~skipped, "bound"])
    assert {"memory", "compute", "latency"} <= bounds <= {"memory", "compute", "latency",
                                                          "borderline"}  # fmt: skip
    host = table[~on_gpu]  # cpu_blas: timed on the host, never profiled
    assert set(host["variant"]) == {"cpu_blas"} and host["ncu_time_ms"].isna().all()
    assert (host["error"] == "").all()
    assert (pd.read_csv(results / "table.csv")["config_id"] == table["config_id"]).all()
    for figure in STANDARD_FIGURES:
        png = (results / f"{figure}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
        svg = (results / f"{figure}.svg").read_text()
        assert f"replayed from capture h100-sxm, {info['date']}" in svg
    roofs = (results / "roofline.svg").read_text()
    ceilings = json.loads((CAPTURES / "h100-sxm" / "device.json").read_text())["ceilings"]
    assert "FP16 tensor " in roofs and "TF32 tensor " in roofs
    fp16 = ceilings["tensor_fp16"]["value"]  # in TFLOP/s, or PFLOP/s once a roof passes 1000
    assert f"measured {fp16 / 1e12:,.3g}" in roofs or f"measured {fp16 / 1e15:,.3g}" in roofs
    for label in ("DRAM 3.35 TB/s", "L2 intensity", "cublas_fp32 (library)"):
        assert label in roofs, label
    fp32 = table["roof_measured_flops_per_s"][table["roof"] == "fp32"].iloc[0]  # the row's
    assert re.search(rf"FP32 [\d.]+ \(measured ({fp32 / 1e12:,.3g}\) T|{fp32 / 1e15:,.3g}\) P)",
                     roofs)  # fmt: skip
    # warptile and the WMMA rungs are swept over two or more shapes: a panel per size each
    sweep = (results / "sweep.svg").read_text()
    assert "warptile, M = 4096" in sweep and "wmma_fp16_pipelined, M = 2049" in sweep
    performance = (results / "performance.svg").read_text()
    assert "float16" in performance  # one panel per precision
    assert "hollow: 2049" in performance  # drawn apart from 2048, not joined to it
    # replay reproduces the table the GPU run itself wrote, value for value
    gpu = pd.read_parquet(ROOT / "resources" / "captures" / "h100-sxm" / "matmul_ladder"
                          / "table.parquet")  # fmt: skip
    # every column the GPU run wrote, in its order (later columns may come in between)
    assert [c for c in table.columns if c in gpu.columns] == list(gpu.columns)
    numeric = measured_numbers(gpu)
    pd.testing.assert_frame_equal(table[numeric], gpu[numeric], check_exact=True)
    ladder = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ladder.py"), "--table",
         str(results / "table.parquet")], capture_output=True, text=True,
    )  # fmt: skip
    # every target holds on the H100: the 4096 ones, the best fp16 rung against cuBLAS at
    # 2049, and every rung's spread there (wgmma_fp16's 3.0 % before the gate)
    assert ladder.returncode == 0, ladder.stdout + ladder.stderr
    assert ladder.stdout.count("PASS") == 8 and "FAIL" not in ladder.stdout
    assert "| stream_k | float32 |" in ladder.stdout
    assert "PASS  wgmma_fp16: " in ladder.stdout
    assert "PASS  mma_fp16: " in ladder.stdout and "% of cuBLAS (target 60 %)" in ladder.stdout
    assert re.search(r"PASS  best float32 kernel stream_k: [\d.]+ % of cuBLAS \(target 90 %\)",
                     ladder.stdout)  # fmt: skip
    assert "PASS  best float16 kernel at 2049 wgmma_fp16: " in ladder.stdout
    assert "PASS  every kernel's CV at 2049 within 2 %; above: none" in ladder.stdout
    # and it fails what does not hold: a rung that spreads, a rung below its target
    worse = table.copy()
    spread = (worse["variant"] == "wgmma_fp16") & (worse["M"] == 2049)
    worse.loc[spread, "time_cv"] = 0.031
    slower = (worse["variant"] == "mma_fp16") & (worse["M"] == 4096)
    worse.loc[slower, "time_ms"] *= 2  # % of library: the library's time over the rung's
    worse.loc[slower, "gflops"] /= 2
    worse.to_parquet(workflow_copy / "worse.parquet")
    ladder = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ladder.py"), "--table",
         str(workflow_copy / "worse.parquet")], capture_output=True, text=True,
    )  # fmt: skip
    assert ladder.returncode == 1 and ladder.stdout.count("FAIL") == 2
    assert "FAIL  every kernel's CV at 2049 within 2 %; above: wgmma_fp16 3.1 %" in ladder.stdout
    halved = table.loc[(table["variant"] == "mma_fp16") & (table["M"] == 4096), "gflops"].max()
    cublas = table.loc[(table["variant"] == "cublas_fp16") & (table["M"] == 4096), "gflops"].max()
    assert f"FAIL  mma_fp16: {50 * halved / cublas:.1f} % of cuBLAS (target 60 %)" in ladder.stdout
    for variant in ("naive", "smem_tiled", "cublas_fp32"):
        long = pd.read_parquet(results / variant / "p0" / "ncu_long.parquet")
        assert set(long["config_id"]) == set(table.loc[table["variant"] == variant, "config_id"])
    assert "replayed_from" in (workflow_copy / "results" / "device.json").read_text()
    (devices,) = (workflow_copy / "results" / "devices").glob("*.json")  # the capture's GPU
    assert devices.name == "NVIDIA_H100_80GB_HBM3.json"
    assert len(json.loads(devices.read_text())["jobs"]) == 32
    # how long it took, in all and per stage (every job's stage counted once)
    run = json.loads((workflow_copy / "results" / "run.json").read_text())
    assert run["cores"] == 2 and run["gpus"] == 1 and run["mode"] == "replay" and run["ok"]
    jobs = {stage: entry["jobs"] for stage, entry in run["stages"].items()}
    batches = len(list((workflow_copy / "results").glob("*/measure.b*")))  # ncu.variants_per_job's
    assert batches >= 3
    assert jobs == {"start": 1, "ceilings": 1, "device-facts": 1, "device-table": 1, "compile": 3,
                    "devices": 1, "measure": batches, "profile": batches, "collect": 3,
                    "plot": 3, "summary": 3}  # fmt: skip
    assert 0 < sum(e["wall_s"] for e in run["stages"].values() if e["jobs"] == 1) < run["wall_s"]
    again = run_snakemake(workflow_copy, "--cores", "1", "-n", "--config", "mode=replay")
    assert "Nothing to be done" in again.stdout + again.stderr
    summary = (results / "summary.md").read_text()
    assert "M = 4096, N = 4096, K = 4096" in summary and "| warptile | BM=128" in summary
    report = run_snakemake(
        workflow_copy, "--report", "results/report.html", "--config", "mode=replay"
    )
    assert report.returncode == 0, report.stderr[-3000:]
    html = (workflow_copy / "results" / "report.html").read_text()
    tables = ["summary.html", "rungs.html", "findings.html", "device.html"]  # shown in place
    for registered in [*(f"{f}.png" for f in STANDARD_FIGURES), *tables]:
        assert registered in html, registered
    page = (results / "summary.html").read_text()
    assert page.count("<tr>") == len(pd.read_csv(results / "summary.csv")) + 1


def test_a_report_experiment_replays_from_its_own_capture() -> None:
    folder, proc = replayed_once("register_tiling")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "replaying capture h100-sxm-register_tiling" in proc.stderr
    table = pd.read_parquet(folder / "results" / "register_tiling" / "table.parquet")
    assert len(table) == 96 and (table["status"] == "ok").all()
    assert set(table["variant"]) == {"tiled_sync_each_step", "smem_tiled", "coarse_divergent",
                                     "regtile_vd", "transposed_a", "cublas_fp32"}  # fmt: skip


def test_a_family_that_only_moves_bytes_replays_end_to_end() -> None:
    folder, proc = replayed_once("transpose")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = folder / "results" / "transpose"
    table = pd.read_parquet(results / "table.parquet")
    assert len(table) == 30 and (table["status"] == "ok").all() and (table["gbps"] > 0).all()
    dram = json.loads((CAPTURES / "h100-sxm-transpose" / "device.json").read_text())
    measured = dram["ceilings"]["dram"]["value"] / 1e12
    assert f"DRAM 3.35 TB/s (measured {measured:,.3g})" in (results / "roofline.svg").read_text()
    gpu = pd.read_parquet(ROOT / "resources" / "captures" / "h100-sxm-transpose" / "transpose"
                          / "table.parquet")  # fmt: skip
    numeric = measured_numbers(gpu)
    pd.testing.assert_frame_equal(table[numeric], gpu[numeric], check_exact=True)
    assert "B/s (compulsory bytes / median time)" in (results / "performance.svg").read_text()


def test_a_variant_split_into_jobs_replays_to_the_same_table() -> None:
    """At most ten configurations per job: regtile_vd's 27 make three jobs (of about equal
    expected time), whose rows make the same table as one job per variant does."""
    folder, proc = replayed_once("register_tiling")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = folder / "results" / "register_tiling"
    assert sorted(p.name for p in (results / "regtile_vd").iterdir()) == ["p0", "p1", "p2"]
    parts = [json.loads((results / "regtile_vd" / p / "plan.json").read_text())["configs"]
             for p in ("p0", "p1", "p2")]  # fmt: skip
    assert all(sum(row["status"] == "pending" for row in part) <= 10 for part in parts)
    table = pd.read_parquet(results / "table.parquet")
    ids = [row["config_id"] for part in parts for row in part]  # the grid, in order
    assert ids == table.loc[table["variant"] == "regtile_vd", "config_id"].tolist()
    whole = replayed("h100-sxm-register_tiling")["register_tiling"]  # one job per variant
    numeric = [c for c in whole.columns if pd.api.types.is_numeric_dtype(whole[c])]
    pd.testing.assert_frame_equal(table[numeric], whole[numeric], check_exact=True)
    long = ncuflow.load(folder / "results", metrics=True)
    assert set(long["variant"]) == set(table["variant"])  # the six, each profiled
    assert long.loc[long["variant"] == "regtile_vd", "config_id"].nunique() == 27


def test_configuration_missing_from_the_capture_is_an_error_naming_it(workflow_copy: Path) -> None:
    """Said while planning (a dry run too), before any job starts: what is missing, where
    it was looked for, and the closest configurations the capture has."""
    _write_config(
        workflow_copy,
        {"mine": {"family": "matmul", "sizes": {"M": [1024, 512], "N": "M", "K": "M"},
                  "variants": {"naive": {"params": {"BLOCK_X": [32], "BLOCK_Y": [16]}}}}},
        mode="replay",
    )  # fmt: skip
    for args in (["-n"], []):
        proc = run_snakemake(workflow_copy, "--cores", "1", *args)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        line = next(x for x in proc.stderr.splitlines() if "has no timing record" in x)
        assert line.startswith(
            "ncuflow: capture h100-sxm has no timing record of configuration(s) BLOCK_X=32_"
            "BLOCK_Y=16_M=512_N=512_K=512 (experiments.mine.variants.naive; looked in "
            "matmul_ladder/naive; closest it has: BLOCK_X=32_BLOCK_Y=16_M=1024_N=1024_K=1024"
        ), line
        assert "Job stats" not in proc.stdout + proc.stderr  # no job started
    assert not (workflow_copy / "results").exists()


def test_a_study_of_ones_own_replays_by_configuration(workflow_copy: Path) -> None:
    """Named otherwise than the capture's experiment, over configurations it holds: each
    is found by its variant and configuration, with the capture's own numbers."""
    _write_config(
        workflow_copy,
        {"mini": {"family": "matmul", "sizes": {"M": [1024, 4096], "N": "M", "K": "M"},
                  "variants": {"smem_tiled": {"params": {"TILE": [32]}}, "cublas_fp32": None}}},
        mode="replay",
    )  # fmt: skip
    proc = run_snakemake(workflow_copy, "--cores", "2", "results/mini/table.parquet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pd.read_parquet(workflow_copy / "results" / "mini" / "table.parquet")
    gpu = pd.read_parquet(CAPTURES / "h100-sxm" / "matmul_ladder" / "table.parquet")
    keys = ["variant", "config_id"]
    both = table.merge(gpu, on=keys, suffixes=("", "_gpu"))
    assert len(both) == len(table) == 4 and (table["status"] == "ok").all()
    for column in ("time_ms", "dram_bytes", "flops_counted"):
        assert (both[column] == both[f"{column}_gpu"]).all(), column


def test_a_replay_measured_otherwise_says_so_in_its_last_lines(workflow_copy: Path) -> None:
    """Other timing and ncu settings than the capture's: the run goes on, and says so."""
    _write_config(
        workflow_copy,
        {"matmul_ladder": {"family": "matmul", "sizes": {"M": [1024, 2048], "N": "M", "K": "M"},
                           "variants": {"naive": {"params": {"BLOCK_X": [32], "BLOCK_Y": [16]}}}}},
        mode="replay", timing={"min_repeats": 10}, ncu={"clock_control": "base"},
    )  # fmt: skip
    proc = run_snakemake(workflow_copy, "--cores", "1", "results/matmul_ladder/table.parquet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    warned = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert warned == [
        "ncuflow: matmul_ladder: warning: 2 configurations replayed from a capture that "
        'differs from this config: ncu.clock_control "none" in the capture, "base" here; '
        "timing.min_repeats 20 in the capture, 10 here"
        + changed_sources_line("h100-sxm", "matmul_ladder", "matmul")
    ]
    table = pd.read_parquet(workflow_copy / "results" / "matmul_ladder" / "table.parquet")
    assert table["capture_mismatch"].str.contains("min_repeats 20 in the capture").all()


@pytest.mark.parametrize(
    ("experiments", "config", "message"),
    [
        ({"e": {"family": "mm", "sizes": {"M": 8}, "variants": {"naive": None}}}, [],
         "ncuflow: config error at experiments.e.family: unknown family 'mm'; valid: "
         "axpy, classifier, conv, histogram, matmul, transfer, transpose"),
        ({"e": {"family": "matmul", "sizes": {"M": [8, -1], "N": "M", "K": "M"},
                "variants": {"naive": None}}}, [],
         "ncuflow: config error at experiments.e.sizes.M[1]: -1 is less than the minimum of 1"),
        ({"e": {"family": "matmul", "sizes": {"M": 8, "N": "M", "K": "M"},
                "variants": {"smem_tiled": {"params": {"TILE": [64]}}}}}, [],
         "variants.smem_tiled.params: every one of the 1 combinations fails: block 64×64×1"),
        ({"e": {"family": "matmul", "sizes": {"M": 8, "N": "M", "K": "M"},
                "variants": {"naive": None}}}, ["--config", "mode=replay", "capture=a100"],
         "ncuflow: replay needs capture 'a100'"),
    ],
)  # fmt: skip
def test_bad_input_gets_one_message_and_no_traceback(
    workflow_copy: Path, experiments: dict, config: list[str], message: str
) -> None:
    _write_config(workflow_copy, experiments)
    proc = run_snakemake(workflow_copy, "--cores", "1", "-n", *config)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def _jobs(proc: subprocess.CompletedProcess) -> list[str]:
    """The job counts of a dry run (its 'Job stats' table)."""
    lines = (proc.stdout + proc.stderr).splitlines()
    start = lines.index("Job stats:")
    return lines[start : lines.index("", start)]


@pytest.mark.skipif(cuda_device()[0] is not None, reason="this machine has a CUDA device")
def test_the_mode_is_decided_by_each_job_and_the_dag_is_the_same(workflow_copy: Path) -> None:
    """The DAG is the same whatever the mode; mode gpu on a machine without a GPU is said
    at the start, and each job that finds none fails with the fix."""
    runs = {m: run_snakemake(workflow_copy, "--cores", "1", "-n", "--config", f"mode={m}")
            for m in ("auto", "replay", "gpu")}  # fmt: skip
    assert all(proc.returncode == 0 for proc in runs.values())
    assert _jobs(runs["auto"]) == _jobs(runs["replay"]) == _jobs(runs["gpu"])
    assert "ncuflow: mode gpu, but this machine cannot measure" in runs["gpu"].stderr
    config = yaml.safe_load((workflow_copy / "config.yaml").read_text())
    config["experiments"]["matmul_ladder"]["variants"] = {"cublas_fp32": None}
    config["experiments"]["matmul_ladder"]["sizes"]["M"] = [1024]
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(workflow_copy, "--cores", "1", "--config", "mode=gpu")
    assert proc.returncode == 1
    assert "mode is gpu but CuPy is not installed" in proc.stderr and "Traceback" not in proc.stderr


def test_dry_run_of_2000_configurations(workflow_copy: Path) -> None:
    # timed by benchmarks/dry_run.py; here only that it plans every configuration
    _write_config(
        workflow_copy,
        yaml.safe_load((ROOT / "benchmarks" / "dry_run.yaml").read_text())["experiments"],
    )
    # gpu: a replay of configurations the capture lacks is refused while planning
    proc = run_snakemake(workflow_copy, "--cores", "1", "-n", "--config", "mode=gpu")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2000 configurations" in proc.stderr


def test_the_workflow_runs_from_anywhere_with_kernels_outside_it(tmp_path: Path) -> None:
    """snakemake -s <repo>/Snakefile -d <workdir> --configfile <elsewhere>: a kernels_dir
    relative to its config file, the bundled kernels and captures found beside the Snakefile."""
    (tmp_path / "cfg").mkdir()
    shutil.copytree(ROOT / "tests" / "data" / "kernels", tmp_path / "mykernels")
    gather = {"family": "gather", "sizes": {"n": 100, "m": 7}, "variants": {"numpy_gather": None}}
    # gpu: the dry run plans it here; no capture holds it for a replay to be planned
    mine = {"mode": "gpu", "kernels_dir": "../mykernels", "experiments": {"g": gather}}
    (tmp_path / "cfg" / "mine.yaml").write_text(yaml.safe_dump(mine))
    ladder = {"mode": "replay", "experiments": {"matmul_ladder": {
        "family": "matmul", "sizes": {"M": 1024, "N": "M", "K": "M"},
        "variants": {"naive": {"params": {"BLOCK_X": 32, "BLOCK_Y": 16}}}}}}  # fmt: skip
    (tmp_path / "cfg" / "ladder.yaml").write_text(yaml.safe_dump(ladder))
    work = tmp_path / "work"
    work.mkdir()
    where = ["-s", str(ROOT / "Snakefile"), "-d", str(work)]
    mine, ladder_file = (str(tmp_path / "cfg" / f"{n}.yaml") for n in ("mine", "ladder"))
    dry = run_snakemake(tmp_path, *where, "--configfile", mine, "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "1 configurations, 1 to run" in dry.stderr and "measure" in dry.stdout + dry.stderr
    run = run_snakemake(tmp_path, *where, "--configfile", ladder_file, "--cores", "2",
                        "results/matmul_ladder/table.parquet")  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert (work / "results" / "matmul_ladder" / "table.parquet").is_file()
    assert "ncuflow: matmul_ladder: 1 ok" in run.stderr


def test_the_transfer_study_replays_its_gpu_table_and_its_family_figures(
    workflow_copy: Path,
) -> None:
    """Through Snakemake, with the figures its family declares (the layers study's tables
    are test_replay.py's, without Snakemake; the default study replays those families
    through it)."""
    capture = yaml.safe_load((ROOT / "experiments" / "transfer.yaml").read_text())["capture"]
    figures = ["copy_share", "copy_bandwidth", "roofline"]
    targets = ["results/transfer/table.parquet", *(f"results/transfer/{f}.svg" for f in figures)]
    proc = run_snakemake(workflow_copy, *targets, "--cores", "2", "--configfile",
                         "experiments/transfer.yaml", "--config", "mode=replay")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = workflow_copy / "results" / "transfer"
    table = pd.read_parquet(results / "table.parquet")
    gpu = pd.read_parquet(CAPTURES / capture / "transfer" / "table.parquet")
    numeric = measured_numbers(gpu)
    pd.testing.assert_frame_equal(table[numeric], gpu[numeric], check_exact=True)
    assert (table["status"].isin(["ok", "skipped"])).all()
    for figure in figures:
        assert "replayed from capture" in (results / f"{figure}.svg").read_text()
    assert not table["profiled"].any()
    assert "not profiled" in (results / "roofline.svg").read_text()


def test_a_moved_or_copied_project_reruns_nothing(tmp_path: Path) -> None:
    """Plans, command lines and the capture's path are relative to the working folder: a
    project copied elsewhere with its results (times kept) has nothing to do."""
    folder, proc = replayed_once("transpose")
    assert proc.returncode == 0, proc.stderr[-3000:]
    moved = tmp_path / "elsewhere" / "project"
    shutil.copytree(folder, moved, symlinks=True)  # copy2: modification times kept
    proc = run_snakemake(moved, "--dry-run", *REPLAYS["transpose"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
