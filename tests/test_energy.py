"""The energy tier (issue 48): power from NVML's counter over whole updates, checked by its
samples; energy per launch; RAPL for host variants; the config's energy; and the energy
study's captures replayed, with their figure, table, summary and power verdicts."""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from test_figure_layout import layout_problems

from conftest import (
    CAPTURES,
    ROOT,
    made_once,
    minimal_config,
    replayed,
    run_snakemake,
    workflow_copy_into,
)
from ncuflow.analyze.energy import energy_columns, power_limited
from ncuflow.errors import ConfigError
from ncuflow.limits import ENERGY_WARMUP_MAX_S
from ncuflow.measure.energy import (
    COUNTER,
    RAMP_S,
    RAPL,
    SAMPLES,
    STEADY_C,
    STEADY_S,
    _steady,
    energy_fields,
    host_energy,
    power_of,
    time_mean,
)
from ncuflow.nvml import PowerSample
from ncuflow.report.energy import energy_plot
from ncuflow.report.energy_tables import energy_markdown, energy_table, energy_view
from ncuflow.report.style import finish
from ncuflow.report.summary import markdown, summarize
from ncuflow.report.tables import summary_view
from ncuflow.spec import load_family
from ncuflow.study.config import load_study
from ncuflow.vocab import ENERGY_CEILING_NAMES, POWER

START = 1_000.0  # the host's clock when the launches began (s since the epoch)


def _samples(
    watts: float, every_s: float = 0.004, refresh_s: float = 0.1, seconds: float = 1.2,
    sample_watts: float | None = None, counter: bool = True,
) -> list[PowerSample]:  # fmt: skip
    """What a watch reads from a GPU drawing ``watts``: a counter NVML refreshes every
    ``refresh_s``, read every ``every_s``, each read stamped with its own time."""
    out = []
    for i in range(round(seconds / every_s)):
        at = START + i * every_s
        refreshed = START + math.floor(i * every_s / refresh_s) * refresh_s - 0.003
        energy = round(5e6 + 1e3 * watts * (refreshed - START)) if counter else None
        out.append(PowerSample(at, energy, at if counter else None,
                               sample_watts or watts, 1980, 3201, 45, 0))  # fmt: skip
    return out


def test_the_power_is_the_counters_rise_over_whole_updates() -> None:
    """Over whole refreshes after the ramp, the counter gives the power exactly, and the
    samples of the same span are its check; a refresh from before the launches is not used."""
    power = power_of(_samples(300.0, sample_watts=306.0), START, START + 1.2)
    assert power["energy_method"] == COUNTER
    assert power["avg_power_w"] == pytest.approx(300.0, rel=1e-4)
    assert power["avg_power_w_samples"] == pytest.approx(306.0)
    assert RAMP_S <= 0.1 and power["energy_window_s"] == pytest.approx(1.0, abs=1e-6)
    assert power["sm_clock_mhz_energy"] == 1980 and power["temperature_c_energy"] == 45
    assert power["energy_throttle"] == ""


def test_without_a_counter_the_samples_give_the_power() -> None:
    power = power_of(_samples(250.0, counter=False), START, START + 1.2)
    assert power["energy_method"] == SAMPLES
    assert power["avg_power_w"] == pytest.approx(250.0)


def test_the_samples_are_averaged_over_time_not_by_count() -> None:
    """A pace of readings that varies with the power (a host loop that blocks as the GPU's
    queue fills) must not weigh the power: 300 W read twice over 0.9 s, 600 W eleven times
    over the last 0.1 s, average 330 W (a plain mean would say 554)."""
    slow = [(START, 300.0), (START + 0.9, 300.0)]
    fast = [(START + 0.9 + 0.01 * i, 600.0) for i in range(11)]
    readings = slow + fast
    assert time_mean(readings) == pytest.approx(330.0, rel=0.01)
    assert time_mean([(START, 42.0)]) == 42.0


def test_the_warm_up_ends_when_both_temperatures_hold_still() -> None:
    assert _steady([(60, 52), (60 + STEADY_C, 52), (61, 52 + STEADY_C)])
    assert not _steady([(58, 52), (58 + STEADY_C + 1, 52)])  # the GPU still warming
    assert not _steady([(60, 47), (60, 47 + STEADY_C + 1)])  # the memory still warming
    assert _steady([(None, None), (None, None)])  # no sensors: STEADY_S is the warm-up


def test_the_warm_up_runs_until_the_temperatures_hold_still(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """warm_up's loop on a stand-in GPU: steps until both temperatures have held within
    STEADY_C over STEADY_S (shortened here), or until its longest where they never do."""
    import ncuflow.measure.energy as energy

    class Event:
        def record(self, stream: object) -> None: ...
        def synchronize(self) -> None: ...

    monkeypatch.setattr(energy, "cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(Event=Event)))
    monkeypatch.setattr(energy, "STEADY_S", 0.2)

    class Watch:
        def __init__(self, gpu_c: Iterator[int]) -> None:
            self.gpu_c, self.warm = gpu_c, False

        def temperatures(self) -> tuple[int, int]:
            return next(self.gpu_c), 50

    def chunk() -> None:
        time.sleep(0.01)

    settling = Watch(itertools.chain([40, 45, 50, 52, 53], itertools.repeat(54)))
    took = energy.warm_up(chunk, 1.0, None, settling)
    assert 0.2 <= took < 2.0 and settling.warm
    monkeypatch.setattr(energy, "ENERGY_WARMUP_MAX_S", 0.5)
    rising = Watch(itertools.count(40))  # a degree a step: never steady
    assert 0.5 <= energy.warm_up(chunk, 1.0, None, rising) < 2.0 and rising.warm


def test_energy_per_launch_is_power_times_gpu_time_and_a_slow_clock_says_so() -> None:
    power = {"avg_power_w": 500.0, "energy_method": COUNTER, "sm_clock_mhz_energy": 1455.0,
             "energy_throttle": "software power cap"}  # fmt: skip
    fields = energy_fields(power, gpu_s=1.0, launches=4000, sm_clock_max_mhz=1980.0)
    assert fields["energy_j"] == pytest.approx(500.0 * 1.0 / 4000)
    assert fields["energy_launch_ms"] == pytest.approx(0.25)
    assert fields["energy_throttled"] is True
    assert fields["energy_throttle"].startswith("software power cap; SM clock 1455 MHz (73 %")
    assert "energy_j" not in energy_fields({}, 1.0, 10, 1980.0)
    assert "neither" in energy_fields({}, 1.0, 10, 1980.0)["energy_note"]


def _rapl(root: Path, uj: int, wrap: int = 1 << 32) -> None:
    package = root / "intel-rapl:0"
    package.mkdir(parents=True, exist_ok=True)
    (package / "energy_uj").write_text(f"{uj}\n")
    (package / "max_energy_range_uj").write_text(f"{wrap}\n")


def test_a_host_variant_gets_its_energy_from_rapl(tmp_path: Path) -> None:
    """The CPU packages' counters before and after, wrapping around; without them the
    record says why."""
    wrap = 1_000_000
    _rapl(tmp_path, wrap - 10)
    calls = []

    def call() -> None:  # each call spends 2 J of the package's counter
        calls.append(1)
        _rapl(tmp_path, (wrap - 10 + 2_000_000 * len(calls)) % wrap, wrap)

    fields = host_energy(call, 0.05, tmp_path)
    assert fields["energy_method"] == RAPL and fields["energy_launches"] == len(calls)
    # the counter wraps every 1 J here, so each 2 J call reads as 0: as it would on a host
    assert fields["energy_j"] == pytest.approx(0.0)
    _rapl(tmp_path / "slow", 0, 1 << 40)
    fields = host_energy(lambda: _rapl(tmp_path / "slow", 1_500_000, 1 << 40), 0.01,
                         tmp_path / "slow")  # fmt: skip
    assert fields["energy_j"] == pytest.approx(1.5 / fields["energy_launches"])
    (tmp_path / "none").mkdir()
    assert "no RAPL counters" in host_energy(call, 0.01, tmp_path / "none")["energy_note"]
    (tmp_path / "closed" / "intel-rapl:0").mkdir(parents=True)
    assert "not readable" in host_energy(call, 0.01, tmp_path / "closed")["energy_note"]


def _energy_s(energy: object, own: bool | None = None) -> float | None:
    config = minimal_config(**({} if own is None else {"energy": own}))
    if energy is not None:
        config["energy"] = energy
    study = load_study(config, ROOT)
    return study.plan("sq", "naive").timing.energy_s


def test_the_config_asks_for_energy_per_study_and_per_experiment() -> None:
    assert _energy_s(None) is None  # off by default: plans as before (no energy_s key)
    assert "energy_s" not in json.loads(load_study(minimal_config(), ROOT).plan(
        "sq", "naive").to_json())["timing"]  # fmt: skip
    assert _energy_s(True) == 1.0
    assert _energy_s({"seconds": 0.5}) == 0.5
    assert _energy_s(True, own=False) is None
    assert _energy_s(False, own=True) == 1.0
    with pytest.raises(ConfigError, match=r"energy\.seconds: 0\.1 is less than the minimum"):
        _energy_s({"seconds": 0.1})


def test_the_power_verdict_names_the_limit_and_when() -> None:
    row = {"energy_j": 0.16, "flops": 2 * 4096**3, "min_bytes": 3 * 2 * 4096**2,
           "throttle": "", "energy_throttle": "software power cap",
           "bound_reason": "compute-bound: tensor pipe"}  # fmt: skip
    out = energy_columns(row)
    assert out["power_limited"] == POWER
    assert out["gflops_per_w"] == pytest.approx(2 * 4096**3 / 0.16 / 1e9)
    assert out["bound_reason"].startswith(
        "power-bound: NVML reported the GPU held under its "
        "power limit while run back to back for its energy"
    )
    assert out["bound_reason"].endswith("compute-bound: tensor pipe")
    assert power_limited({"throttle": "hardware thermal slowdown"}) == "thermal"
    assert power_limited({"throttle": ""}) == "" and "bound_reason" not in energy_columns({})


@pytest.mark.parametrize("capture", ["h200-energy", "h200-energy-b"])
def test_the_energy_captures_replay_with_their_energy(capture: str) -> None:
    """Every GPU row that checked correct has its energy, from NVML's counter, within 5 %
    of its samples, the first of each measure process after a warm-up; the host's BLAS
    says why it has none; the tensor-core rows run back to back at the power limit say so."""
    tables = replayed(capture)
    rows = pd.concat(tables.values(), ignore_index=True)
    gpu = rows[(rows["runs_on"] == "gpu") & (rows["status"] == "ok")]
    assert gpu["energy_j"].notna().all() and (gpu["energy_method"] == COUNTER).all()
    gap = (gpu["avg_power_w"] / gpu["avg_power_w_samples"] - 1).abs()
    assert (gap < 0.05).all()
    warmed = gpu["energy_warmup_s"].dropna()
    assert len(warmed) >= len(tables) and (warmed >= STEADY_S).all()
    flops = gpu["flops"].astype(float)
    assert (gpu["gflops_per_w"] * gpu["energy_j"] * 1e9).to_numpy() == pytest.approx(
        flops.where(flops > 0).to_numpy(), nan_ok=True)  # fmt: skip
    host = rows[rows["runs_on"] == "cpu"]
    assert host["energy_j"].isna().all() and host["energy_note"].str.contains("RAPL").all()
    held = rows[rows["power_limited"] == POWER]
    assert set(held["variant"]) >= {"wgmma_fp16", "cublas_fp16"}
    assert held["bound_reason"].str.startswith("power-bound").all()


def test_a_gpu_held_at_its_power_limit_while_timed_is_flagged_and_timed_again() -> None:
    """h200-throttle: the tensor-core GEMMs timed in batches of 600 launches reached the
    H200's power limit; each was timed again, says so, and reads power-bound; cuBLAS FP32,
    under the limit, does not."""
    rows = replayed("h200-throttle")["throttle_matmul"]
    tensor = rows[rows["variant"] != "cublas_fp32"]
    assert len(tensor) == 6 and tensor["time_throttled"].all()
    assert tensor["time_note"].str.contains("timed again: the first timing throttled").all()
    assert (tensor["power_limited"] == POWER).all()
    assert tensor["bound_reason"].str.startswith("power-bound").all()
    at_8192 = tensor[tensor["M"] == 8192]
    assert (at_8192["sm_clock_mhz_timing"] < 0.9 * 1980).all()  # the clock shows it too
    fp32 = rows[rows["variant"] == "cublas_fp32"]
    assert not fp32["time_throttled"].any() and (fp32["power_limited"] == "").all()
    # summary.md and its page say so beside the bound, and count them
    family = load_family(ROOT / "kernels", "matmul")
    summary = summarize(rows, family)
    text = markdown(summary, family, "throttle_matmul")
    assert text.count(", power-limited |") == 6 and "6 of these ran while NVML" in text
    shown, _ = summary_view(summary, family.problem_columns)
    assert shown["bound (level)"].str.endswith("power-limited").sum() == 6


def test_the_energy_figure_table_and_summary_read_at_a_glance() -> None:
    device = json.loads((CAPTURES / "h200-energy" / "device.json").read_text())
    for experiment, table in replayed("h200-energy").items():
        family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
        fig = finish(energy_plot(table, family, device), device)
        problems = layout_problems(fig)
        plt.close(fig)
        assert not problems, f"{experiment}: " + "\n".join(problems)
        frame = energy_table(table, family)
        assert len(frame) == table[table["energy_j"].notna()].groupby(
            [*family.problem_columns, "variant"]).ngroups  # fmt: skip
        shown, same = energy_view(frame, table, family)
        assert "energy (mJ)" in shown
        assert shown.columns[0] == "variant" and "power (W)" in shown
        if experiment == "energy_matmul":  # one size: named above the table, not in it
            assert same == "Every row: M = 4096, N = 4096, K = 4096." and "M" not in shown
        text = energy_markdown(table, family)
        assert text.startswith("## Energy") and "also the fastest" in text
    assert "held its clocks down" in energy_markdown(
        replayed("h200-energy")["energy_matmul"], load_family(ROOT / "kernels", "matmul")
    )


def test_the_energy_study_replays_end_to_end() -> None:
    """Snakemake on the energy study (its transpose experiment's figure, table and
    summary): replayed on a CPU, with the capture's energy ceilings."""

    def make(folder: Path) -> None:
        proc = run_snakemake(workflow_copy_into(folder / "workflow"),
                             "results/energy_transpose/energy.png",
                             "results/energy_transpose/summary.md", "--cores", "2",
                             "--configfile", "experiments/energy.yaml", "--config",
                             "mode=replay")  # fmt: skip
        (folder / "rc").write_text(f"{proc.returncode}\n{proc.stderr[-3000:]}")

    folder = made_once("energy-replay", make)
    assert (folder / "rc").read_text().startswith("0"), (folder / "rc").read_text()
    results = folder / "workflow" / "results"
    assert "## Energy" in (results / "energy_transpose" / "summary.md").read_text()
    assert (results / "energy_transpose" / "energy.html").is_file()
    # the energy ceilings apart from the rate ceilings, and both in the device's facts
    energy = json.loads((results / "energy_ceilings.json").read_text())
    assert set(energy) == set(ENERGY_CEILING_NAMES) and energy["energy_dram"]["unit"] == "byte/J"
    assert not set(energy) & set(json.loads((results / "ceilings.json").read_text()))
    assert set(energy) <= set(json.loads((results / "device.json").read_text())["ceilings"])


@pytest.mark.gpu
def test_energy_on_the_gpu_from_a_graph_of_launches() -> None:
    """On the GPU: a short kernel run back to back as a CUDA graph for half a second; its
    power from NVML's counter within 10 % of the samples, its time per launch near its own."""
    import cupy as cp

    from ncuflow.gpu import gpu_properties
    from ncuflow.measure.energy import gpu_energy
    from ncuflow.nvml import PowerWatch

    x = cp.random.random(1 << 24, dtype=cp.float32)
    y = cp.empty_like(x)

    def launch() -> None:
        cp.multiply(x, 2.0, out=y)

    launch()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(20):
        launch()
    end.record()
    end.synchronize()
    time_ms = cp.cuda.get_elapsed_time(start, end) / 20
    watch = PowerWatch()
    fields = gpu_energy(launch, True, 0.5, time_ms, watch, gpu_properties()["sm_clock_max_mhz"])
    assert "energy_note" not in fields, fields
    assert fields["energy_method"] == COUNTER and fields["energy_j"] > 0
    assert fields["avg_power_w"] == pytest.approx(fields["avg_power_w_samples"], rel=0.1)
    assert fields["energy_launch_ms"] == pytest.approx(time_ms, rel=0.3)
    assert STEADY_S <= fields["energy_warmup_s"] <= ENERGY_WARMUP_MAX_S + 1  # the first warms
    again = gpu_energy(launch, True, 0.5, time_ms, watch, gpu_properties()["sm_clock_max_mhz"])
    assert "energy_warmup_s" not in again and again["energy_j"] > 0
