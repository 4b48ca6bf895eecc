"""What changed between rungs, on real captured rows: the verdicts study's transposes (H100,
2026-11-26), where strided_read follows naive in the family's ladder."""

import pandas as pd

from conftest import ROOT, replayed
from ncuflow.report.rungs import RUNG_COLUMNS, markdown, moved, rung_changes
from ncuflow.spec import load_family

CAPTURE = "h100-sxm-verdicts"


def test_each_size_compares_consecutive_rungs_at_their_fastest() -> None:
    table = replayed(CAPTURE)["write_and_l1"]
    folder = ROOT / "resources" / "captures" / CAPTURE / "write_and_l1"
    findings = pd.concat(pd.read_parquet(p).assign(variant=p.parent.name)
                         for p in folder.glob("*/findings.parquet"))  # fmt: skip
    changes = rung_changes(table, load_family(ROOT / "kernels", "transpose"), findings)
    assert list(changes.columns) == RUNG_COLUMNS
    # the library baseline is the yardstick, never a rung
    assert set(zip(changes["from"], changes["to"], strict=True)) == {("naive", "strided_read")}
    assert len(changes) == table["M"].nunique()
    for row in changes.to_dict("records"):
        size = int(row["size"].split(",")[0].split("= ")[1])
        rows = table[(table["M"] == size) & (table["status"] == "ok")]
        fastest = rows.groupby("variant")["time_ms"].min()
        assert row["speedup"] == fastest["naive"] / fastest["strided_read"]
        assert row["moved"].count(",") == 2  # three metrics
    at_4096 = changes[changes["size"] == "M = 4096, N = 4096"].iloc[0]
    # strided stores go, strided loads come: ncu's findings say so
    assert "L1TEX Global Store Access Pattern" in at_4096["findings_gone"]
    assert "L1TEX Global Load Access Pattern" in at_4096["findings_new"]
    assert (at_4096["bound_from"], at_4096["bound_to"]) == ("memory (l2)", "memory (l1)")
    text = markdown(changes)
    assert text.startswith("## What changed between rungs")
    assert "strided_read runs " in text and "as fast as naive" in text


def test_moved_ranks_counts_by_factor_and_shares_by_points() -> None:
    a = pd.Series({"dram_bytes": 100.0, "achieved_occupancy_pct": 50.0, "instructions": 10.0})
    b = pd.Series({"dram_bytes": 800.0, "achieved_occupancy_pct": 60.0, "instructions": 10.0})
    assert moved(a, b) == ["DRAM bytes 8×", "achieved occupancy 50 → 60 %"]
    assert moved(b, a)[0] == "DRAM bytes ÷8"
