"""Verdicts on every committed capture: ncuflow's bound against Nsight Compute's own
(captures with findings, from 2026-11-26 on), and no row above its level's measured
ceiling (captures whose ceilings are the best of several patterns, from the same day).
Captures from before either are named as such, not failed."""

import math

import pandas as pd
import pytest

from conftest import CAPTURES, replayed
from ncuflow.analyze.verdicts import above_ceilings, agreement
from ncuflow.files import read_json

ALL = sorted(p.name for p in CAPTURES.iterdir() if (p / "capture.json").is_file())


def _tables(capture: str) -> pd.DataFrame:
    return pd.concat(replayed(capture).values(), ignore_index=True)


@pytest.mark.parametrize("capture", ALL)
def test_the_bound_agrees_with_ncus_own_verdict(capture: str) -> None:
    table = _tables(capture)
    judged = table[table["ncu_bottleneck"].notna()]
    if judged.empty:
        why = ("profiles nothing" if not table["profiled"].any()
               else "predates findings (no SOLBottleneck verdict kept)")  # fmt: skip
        pytest.skip(f"{capture} {why}")
    share, disagreements = agreement(table)
    assert share >= 0.98, disagreements[["variant", "config_id", "bound_reason"]].to_string()
    assert disagreements["bound_reason"].str.contains("ncu says").all()


def _patterned(capture: str) -> dict:
    """The capture's ceilings where they are the best of several patterns, else those of the
    newest capture of the same GPU model that has such ceilings."""
    device = read_json(CAPTURES / capture / "device.json")
    if any("patterns" in e for e in device.get("ceilings", {}).values()):
        return device["ceilings"]
    same = [read_json(CAPTURES / c / "device.json") for c in ALL]
    same = [d for d in same if d.get("name") == device.get("name")
            and any("patterns" in e for e in d.get("ceilings", {}).values())]  # fmt: skip
    return max(same, key=lambda d: d["date"])["ceilings"] if same else {}


@pytest.mark.parametrize("capture", ALL)
def test_no_row_is_above_its_measured_ceiling(capture: str) -> None:
    ceilings = _patterned(capture)
    assert ceilings, f"no capture of {capture}'s GPU measured ceilings by patterns"
    above = above_ceilings(_tables(capture), ceilings)
    assert above.empty, above.to_string()


def test_the_ceiling_is_its_best_pattern() -> None:
    for capture in ALL:
        ceilings = read_json(CAPTURES / capture / "device.json").get("ceilings", {})
        for name, entry in ceilings.items():
            if "patterns" in entry:
                best = max(p["value"] for p in entry["patterns"].values())
                assert math.isclose(entry["value"], best), (capture, name)
                assert entry["patterns"][entry["pattern"]]["value"] == entry["value"]
