"""Two hosts compared: what their devices differ in is said, and a speedup the hosts' clocks
or measured ceilings account for reads HOST, not FASTER (report.hosts)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ncuflow.report.hosts import differences, explained, host_factor

FACTS = {"name": "NVIDIA H200", "driver": "580.159.04", "power_limit_w": 700.0, "ecc": "on",
         "ceilings": {"dram": {"value": 4.4e12}, "fp32": {"value": 5.0e13}}}  # fmt: skip


def _rows() -> pd.DataFrame:
    return pd.DataFrame({
        "bound_b": ["compute", "latency", "memory", "memory", "borderline"],
        "bound_level_b": ["fp32", "tail", "dram", "shared", "x"],
        "sm_clock_mhz_timing_a": [1980.0, 1980.0, 1980.0, 1980.0, 1980.0],
        "sm_clock_mhz_timing_b": [1782.0, 1782.0, 1782.0, 1782.0, 1782.0],
    })  # fmt: skip


def test_what_the_hosts_make_of_a_speedup_follows_each_configurations_bound() -> None:
    other = {**FACTS, "ceilings": {"dram": {"value": 4.62e12}, "fp32": {"value": 4.5e13}}}
    factor = host_factor(_rows(), FACTS, other)
    # clocks for compute and latency, the level's ceiling for memory, nothing unknown
    assert np.allclose(factor[:3], [0.9, 0.9, 1.05]) and np.isnan(factor[3:]).all()


def test_a_change_the_hosts_explain_reads_host() -> None:
    factor = np.array([0.9, 0.9, 1.05, np.nan])
    told = explained(["SLOWER", "SLOWER", "FASTER", "FASTER"], [0.89, 0.80, 1.04, 1.04],
                     [0.91, 0.82, 1.06, 1.06], factor, [0.02] * 4)  # fmt: skip
    # 10 % slower at a 10 % lower clock: the host's; 20 % slower at it: still SLOWER
    assert told == ["HOST", "SLOWER", "HOST", "FASTER"]
    assert explained(["SAME"], [0.99], [1.01], np.array([0.9]), [0.02]) == ["SAME"]
    # a row whose rounds spread by 5 %: a change the clock explains within that reads HOST
    assert explained(["SLOWER"], [0.86], [0.90], np.array([0.9]), [0.05]) == ["HOST"]


def test_the_differences_of_two_hosts_are_named() -> None:
    ceilings = {"dram": {"value": 4.0e12}, "fp32": {"value": 5.01e13}}
    other = {**FACTS, "power_limit_w": 600.0, "ceilings": ceilings}
    lines = differences(FACTS, other, _rows())
    assert "- power limit (W): 700.0 (A), 600.0 (B)" in lines
    assert "- measured ceiling dram: B's is 0.909× A's" in lines
    assert not any("fp32" in line for line in lines)  # 0.2 %: the same
    assert "- SM clock while timed (median): 1980 MHz (A), 1782 MHz (B)" in lines
    assert differences(FACTS, FACTS, _rows().assign(sm_clock_mhz_timing_b=1980.0)) == []
    old = differences({"name": "NVIDIA H200"}, FACTS, _rows().iloc[:0])
    assert old == ["- A kept no NVML facts (a run before 2026-11-28, or without "
                   "nvidia-ml-py): what else the hosts differ in is unknown"]  # fmt: skip
