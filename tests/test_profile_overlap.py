"""The profile stage with two processes: the next chunk's ncu process started while one
profiles, behind a gate (profile.stage, profile.worker)."""

import itertools
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from test_profile import _chunked

from ncuflow.errors import NcuflowError
from ncuflow.limits import chunk_limit
from ncuflow.ncu import ProfileFailed, run_ncu
from ncuflow.plan import Plan
from ncuflow.profile.worker import import_required, wait_for, worker_command


@pytest.mark.parametrize("fail", [set(), {0}])
def test_the_next_chunk_starts_while_one_profiles_but_never_beside_it_on_the_gpu(
    tmp_path: Path, fail: set[int]
) -> None:
    """With two processes (a job of two threads) the next chunk's worker starts while the
    one before profiles and waits for it to end before it touches the GPU; one that dies
    without opening the gate holds nobody up."""
    calls: list[list[str]] = []
    on_gpu: list[tuple[str, float, float, float, float]] = []
    _chunked(tmp_path, fail, calls, "best", source="shortest", processes=2, on_gpu=on_gpu)
    spans = sorted(on_gpu, key=lambda s: s[2])
    assert [c for c, *_ in spans[:2]] == ["source_000", "explain_000"]
    assert spans[1][1] < spans[0][3]  # the second started while the first profiled
    if not fail:
        plan = Plan.load(tmp_path / "plan.json")
        work = json.loads((tmp_path / "chunks" / "explain_000.work.json").read_text())
        own = chunk_limit(plan.timing, [r for r in plan.configs if r.config_id in work[0]["ids"]])
        assert spans[1][4] == pytest.approx(own)  # its own, counted once the gate opened
    for (_, _, _, end, _), (_, _, gpu, _, _) in itertools.pairwise(spans):
        assert end <= gpu  # on the GPU only once the one before is done
    assert not list((tmp_path / "chunks").glob("*.gate"))
    if fail:  # the source tier's configuration went to the tier below, which took it
        assert any(calls[0][0] in c for c in calls[2:]), calls
        assert json.loads((tmp_path / "profile_errors.json").read_text()) == {}
    long = pd.read_parquet(tmp_path / "ncu_long.parquet")
    assert long["config_id"].nunique() == 4  # every configuration profiled, each once:
    assert not long.duplicated(["config_id", "kernel_name", "metric"]).any()


def test_a_chunk_that_dies_before_its_gate_lets_no_other_beside_the_one_before(
    tmp_path: Path,
) -> None:
    """The second of four chunks fails at once, while the first profiles: the third waits
    for the first all the same."""
    calls: list[list[str]] = []
    on_gpu: list[tuple[str, float, float, float, float]] = []
    _chunked(tmp_path, set(), calls, processes=2, on_gpu=on_gpu, chunk_size=1,
             dies_at_start="sweep_001")  # fmt: skip
    spans = sorted(on_gpu, key=lambda s: s[2])
    assert [c for c, *_ in spans] == ["sweep_000", "sweep_002", "sweep_003"]
    for (_, _, _, end, _), (_, _, gpu, _, _) in itertools.pairwise(spans):
        assert end <= gpu


@pytest.mark.parametrize("processes", [1, 2])
def test_a_profile_stage_that_breaks_starts_no_chunk_more(tmp_path: Path, processes: int) -> None:
    """An error of the stage's own (or Ctrl-C) while chunks wait their turn: those not
    started never are, and the error comes out."""
    calls: list[list[str]] = []
    on_gpu: list[tuple[str, float, float, float, float]] = []
    with pytest.raises(NcuflowError, match="the stand-in broke"):
        _chunked(tmp_path, set(), calls, processes=processes, on_gpu=on_gpu, chunk_size=1,
                 broken=0)  # fmt: skip
    time.sleep(0.5)
    assert len(calls) <= processes + 1  # of 4 chunks


def test_a_gated_worker_imports_first_and_waits_for_its_gate(tmp_path: Path) -> None:
    """What a worker started ahead does before the GPU: its variants' modules imported (one
    that is missing left for the launch to report), then the gate waited for."""
    works = [SimpleNamespace(variant=SimpleNamespace(requires=("json", "no_such_module_x")))]
    import_required(works)  # type: ignore[arg-type]
    gate = tmp_path / "source_000.gate"
    threading.Timer(0.2, gate.touch).start()
    started = time.monotonic()
    wait_for(gate)
    assert time.monotonic() - started >= 0.15
    command = worker_command(tmp_path / "w.json", None, gate)
    assert command[-2:] == ["-", str(gate)]


def test_a_time_limit_counts_from_when_the_gate_opens(tmp_path: Path) -> None:
    """ncu started ahead is not killed for the time it waited for the chunk before it."""
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\nsleep 2\n")
    ncu.chmod(0o755)
    gate = tmp_path / "source_000.gate"
    threading.Timer(1.5, gate.touch).start()  # 1 s from then: past the 2 s it takes
    assert run_ncu([str(ncu)], lambda line: None, 1.0, gate) >= 2
    gate.unlink()
    threading.Timer(0.2, gate.touch).start()
    with pytest.raises(ProfileFailed, match="within 1 s"):
        run_ncu([str(ncu)], lambda line: None, 1.0, gate)
