"""ncuflow compare as a CI gate: identical runs pass, a real slow-down or a broken kernel
fails with its own exit status, and gate.md says which, short enough for a pull request."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from conftest import CAPTURES
from ncuflow.report.compare import run as compare_runs
from ncuflow.report.gate import GATE_FAILED

CAPTURE = CAPTURES / "h100-sxm-axpy"  # 40 configurations ok, a host variant among them


def _copy(tmp_path: Path, name: str, slower: dict[str, float] | None = None,
          broken: str | None = None) -> Path:  # fmt: skip
    """The capture copied, each variant of ``slower`` timed that many times slower (every
    repeat and the table's time), and ``broken``'s first configuration a wrong result."""
    side = tmp_path / name
    shutil.copytree(CAPTURE, side)
    table_path = side / "axpy" / "table.parquet"
    table = pd.read_parquet(table_path)
    for variant, factor in (slower or {}).items():
        path = side / "axpy" / variant / "measure.json"
        records = json.loads(path.read_text())
        for record in records.values():
            record["times_ms"] = [t * factor for t in record.get("times_ms", [])]
        path.write_text(json.dumps(records))
        table.loc[table["variant"] == variant, "time_ms"] *= factor
    if broken is not None:
        first = table.index[(table["variant"] == broken) & (table["status"] == "ok")][0]
        table.loc[first, ["status", "error"]] = ["wrong_result", "max |error| 3.0 over 1e-05"]
    table.to_parquet(table_path)
    return side


def test_identical_runs_pass_the_gate(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    paths, failing = compare_runs(a, b, tmp_path / "out", fail_on=("slower", "missing"))
    assert failing == {} and tmp_path / "out" / "gate.md" in paths
    text = (tmp_path / "out" / "gate.md").read_text()
    assert text.startswith("## ncuflow compare: PASS\n")
    rows = pd.read_csv(tmp_path / "out" / "compare.csv")
    # the same repeats on both sides: SAME, but where they scatter by tens of percent (the
    # host's NumPy at 16 M elements), resampling them cannot tell
    gpu = rows["variant"] != "numpy_axpy"
    assert (rows.loc[gpu, "verdict"] == "SAME").all() and len(rows) == 40


def test_a_slower_variant_and_a_broken_kernel_fail_the_gate(tmp_path: Path) -> None:
    a = _copy(tmp_path, "a")
    b = _copy(tmp_path, "b", slower={"naive": 1.10}, broken="vectorized")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "ncuflow", "compare", str(a), str(b), "--out", str(out),
               "--fail-on", "slower"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == GATE_FAILED, proc.stderr
    naive = (pd.read_parquet(CAPTURE / "axpy" / "table.parquet")["variant"] == "naive").sum()
    assert f"the gate fails (--fail-on slower): {naive} SLOWER, 1 broken" in proc.stdout
    text = (out / "gate.md").read_text()
    assert text.startswith(f"## ncuflow compare: FAIL: {naive} SLOWER, 1 broken\n")
    assert f"Slower in B ({naive}, the slowest first):" in text
    assert "| axpy | naive | " in text and " | 0.909 (" in text  # 1 / 1.10
    assert f"and {naive - 10} more in compare.csv" in text  # ten shown
    assert "Ran ok in A, broken in B (1):" in text and ": wrong_result (max |error|" in text
    # a threshold above the change: the slow-down is no change, the broken kernel still fails
    _, failing = compare_runs(a, b, out, least_effect=0.15, fail_on=("slower",))
    assert failing == {"broken": 1}
    # the host's NumPy scatters too much to tell (above); asked to fail on that, it does
    _, failing = compare_runs(a, b, out, fail_on=("ambiguous",))
    assert failing == {"AMBIGUOUS": 2}
    _, failing = compare_runs(a, b, out, fail_on=("missing",))
    assert failing == {} and (out / "gate.md").read_text().startswith("## ncuflow compare: PASS")


def test_a_configuration_b_no_longer_measures_fails_only_where_asked(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    table = pd.read_parquet(b / "axpy" / "table.parquet")
    table[table["variant"] != "grid_stride"].to_parquet(b / "axpy" / "table.parquet")
    shutil.rmtree(b / "axpy" / "grid_stride")
    dropped = int(((table["variant"] == "grid_stride") & (table["status"] == "ok")).sum())
    _, failing = compare_runs(a, b, tmp_path / "out", fail_on=("slower",))
    assert failing == {}
    _, failing = compare_runs(a, b, tmp_path / "out", fail_on=("slower", "missing"))
    assert failing == {"missing": dropped}
    text = (tmp_path / "out" / "gate.md").read_text()
    assert f"Measured ok in A, not in B ({dropped}), e.g. axpy/grid_stride/" in text


def test_identical_code_on_one_host_and_on_another_compares_without_a_change(
    tmp_path: Path,
) -> None:
    # experiments/gate.yaml on one H200 twice (a, b; 2026-11-29, ten rounds of timing) and
    # on another H200 (host2; 2026-11-28, three rounds): no configuration FASTER or SLOWER,
    # the gate passes; on one host every configuration reads SAME, and the one that cannot
    # tell on the other is a kernel under 10 µs, whose rounds differ by 2 to 4 %
    a = CAPTURES / "h200-gate"
    for other in ("h200-gate-b", "h200-gate-host2"):
        out = tmp_path / other
        _, failing = compare_runs(a, CAPTURES / other, out, fail_on=("slower",))
        assert failing == {}, other
        rows = pd.read_csv(out / "compare.csv")
        assert not rows["verdict"].isin(["FASTER", "SLOWER"]).any(), other
        unsure = rows[rows["verdict"] != "SAME"]
        assert (unsure["time_ms_a"] < 0.010).all() and len(rows) == 32, other
        assert other != "h200-gate-b" or unsure.empty
        assert (rows["least_effect"] >= 0.02).all()
