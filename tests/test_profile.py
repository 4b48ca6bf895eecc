import csv
import dataclasses
import json
import os
import stat
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT
from ncuflow.errors import NcuflowError
from ncuflow.files import user_cache
from ncuflow.metrics import PRECISIONS, TENSOR, required_metrics
from ncuflow.ncu import (
    PERMISSION_HELP,
    NcuSettings,
    ProfileFailed,
    available_metrics,
    export_csv,
    find_ncu,
    ncu_command,
    run_ncu,
)
from ncuflow.plan import Plan, read_records
from ncuflow.profile.long_table import write_long
from ncuflow.profile.members import Member
from ncuflow.profile.stage import profile_stage, tier_sections
from ncuflow.profile.worker import worker_command
from ncuflow.vocab import USER_CACHE_ENV, split_target


def test_one_command_profiles_every_configuration_range() -> None:
    worker = worker_command(Path("chunks/sweep_000.work.json"))
    command = ncu_command(
        "ncu", Path("out/profile"), ["SpeedOfLight", "Occupancy"], "none",
        [*required_metrics(), "sm__x.sum"], worker,
    )  # fmt: skip
    text = " ".join(command)
    assert "--nvtx --nvtx-include regex:ncuflow_.*/" in text
    assert "--clock-control none" in text and "-o out/profile" in text
    assert "--section SpeedOfLight --section Occupancy" in text
    metrics = command[command.index("--metrics") + 1].split(",")
    assert metrics == [*required_metrics(), "sm__x.sum"]
    # the registry's counters: FLOPs by precision, the hierarchical levels, the dense peaks
    for metric in ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
                   "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
                   "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
                   "lts__lts2xbar_cycles_active.sum",
                   "l1tex__lsu_writeback_active_mem_lgds.sum",
                   "lts__t_sectors_srcunit_tex_op_write.sum"):  # fmt: skip
        assert metric in metrics
    assert command[-len(worker) :] == worker
    assert worker[1:] == ["-m", "ncuflow.profile.worker", "chunks/sweep_000.work.json"]


def test_missing_ncu_says_how_to_point_at_it() -> None:
    with pytest.raises(
        NcuflowError, match=r"no such program is on PATH.*set ncu.path in config.yaml"
    ):
        find_ncu("no-such-ncu-anywhere")


def _fake_ncu(tmp_path: Path, output: str, code: int) -> str:
    path = tmp_path / "ncu"
    path.write_text(f"#!/bin/sh\necho '{output}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_counter_permission_error_explains_the_fix(tmp_path: Path) -> None:
    ncu = _fake_ncu(tmp_path, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", 1)
    with pytest.raises(NcuflowError) as info:
        run_ncu([ncu], lambda line: None)
    assert str(info.value) == PERMISSION_HELP
    assert "NVreg_RestrictProfilingToAdminUsers=0" in PERMISSION_HELP


def test_ncu_failure_shows_ncu_errors(tmp_path: Path) -> None:
    ncu = _fake_ncu(tmp_path, "==ERROR== Failed to find metric sm__nope", 1)
    logged: list[str] = []
    with pytest.raises(ProfileFailed, match=r"exit code 1\): ==ERROR== Failed to find metric"):
        run_ncu([ncu], logged.append)
    assert logged == ["==ERROR== Failed to find metric sm__nope"]


def test_ncu_success_returns_seconds(tmp_path: Path) -> None:
    assert run_ncu([_fake_ncu(tmp_path, "==PROF== Report: x", 0)], lambda line: None) >= 0
    assert os.access(tmp_path / "ncu", os.X_OK)


def test_a_report_is_exported_beside_its_reading_and_a_failed_export_leaves_nothing(
    tmp_path: Path,
) -> None:
    """export_csv starts ncu and returns at once; its waiter puts the CSV in place whole, or
    raises with ncu's errors and leaves no file, whole or partial."""
    out = tmp_path / "chunk.csv"
    ncu = tmp_path / "ncu"
    ncu.write_text('#!/bin/sh\nsleep 0.3\necho \'"ID","Kernel Name"\'\n')
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR)
    started = time.monotonic()
    exported = export_csv(str(ncu), tmp_path / "chunk.ncu-rep", out)
    assert time.monotonic() - started < 0.25 and not out.exists()  # not waited for
    exported()
    assert out.read_text() == '"ID","Kernel Name"\n'
    out.unlink()
    ncu.write_text("#!/bin/sh\necho partial\necho '==ERROR== cannot read the report' >&2\nexit 1\n")
    with pytest.raises(NcuflowError, match=r"could not export .*cannot read the report"):
        export_csv(str(ncu), tmp_path / "chunk.ncu-rep", out)()
    assert [p.name for p in tmp_path.iterdir() if "chunk.csv" in p.name] == []


# What `ncu --query-metrics` prints (ncu 2025.3.1, H200, 2026-11-28, cut short): a header,
# a counter a line, long descriptions wrapped onto the next; no inst_executed, no launch__*.
LISTING = f"""Device NVIDIA H200 (GH100)
{"-" * 59} {"-" * 15} {"-" * 15} {"-" * 30}
Metric Name{" " * 49}Metric Type     Metric Unit     Metric Description
{"-" * 59} {"-" * 15} {"-" * 15} {"-" * 30}
dram__bytes{" " * 49}Counter         byte            # of bytes accessed in DRAM
l1tex__data_pipe_lsu_wavefronts{" " * 29}Counter                         # of shared memory data
{" " * 92}wavefronts processed by Data-Stage
sm__cycles_elapsed{" " * 42}Counter         cycle           # of cycles on SM, as in
{" " * 92}sm__cycles_active
"""


def _listing_ncu(tmp_path: Path, listing: str) -> str:
    path = tmp_path / "ncu"
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{listing}EOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_metrics_this_gpu_lacks_are_not_asked_for(tmp_path: Path) -> None:
    """A counter the listing lacks (fp8 before Hopper) is dropped and logged, what ncu takes
    unlisted (inst_executed, occupancy, launch__*) asked for, a wrapped line read as none."""
    logged: list[str] = []
    wanted = ["dram__bytes.sum", "sm__cycles_elapsed.avg.per_second", "inst_executed",
              "sm__maximum_warps_per_active_cycle_pct", "launch__waves_per_multiprocessor",
              "l1tex__data_pipe_lsu_wavefronts.sum", "wavefronts", "sm__cycles_active.sum",
              "sm__ops_path_tensor_src_fp8.sum"]  # fmt: skip
    kept = available_metrics(_listing_ncu(tmp_path, LISTING), wanted, logged.append)
    assert kept == wanted[:-3]
    assert logged == ["this GPU has no 3 of the registry's metrics: sm__cycles_active.sum, "
                      "sm__ops_path_tensor_src_fp8.sum, wavefronts"]  # fmt: skip


def test_a_machine_asks_ncu_for_its_metrics_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing is kept in the user's cache for every later job and run on the machine;
    another ncu (a new file there) is asked again; an unwritable cache only costs time."""
    calls = tmp_path / "calls"
    path = tmp_path / "ncu"
    path.write_text(f"#!/bin/sh\necho x >> {calls}\nprintf 'dram__bytes  words\\n'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(USER_CACHE_ENV, str(tmp_path / "cache"))
    for _ in range(3):
        assert available_metrics(str(path), ["dram__bytes.sum"], print) == ["dram__bytes.sum"]
    assert len(calls.read_text().split()) == 1
    assert len(list((tmp_path / "cache" / "ncu-metrics").iterdir())) == 1
    os.utime(path, ns=(0, 0))  # ncu replaced by another
    assert available_metrics(str(path), ["dram__bytes.sum"], print) == ["dram__bytes.sum"]
    assert len(calls.read_text().split()) == 2
    (tmp_path / "blocked").write_text("a file, not a folder")
    monkeypatch.setenv(USER_CACHE_ENV, str(tmp_path / "blocked"))
    for _ in range(2):
        assert available_metrics(str(path), ["dram__bytes.sum"], print) == ["dram__bytes.sum"]
    assert len(calls.read_text().split()) == 4


def test_the_user_cache_is_where_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(USER_CACHE_ENV, str(tmp_path / "mine"))
    assert user_cache("ncu-metrics") == tmp_path / "mine" / "ncu-metrics"
    monkeypatch.delenv(USER_CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache("x") == tmp_path / "xdg" / "ncuflow" / "x"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache("x") == tmp_path / "home" / ".cache" / "ncuflow" / "x"
    monkeypatch.setattr(Path, "home", lambda: (_ for _ in ()).throw(RuntimeError("no home")))
    assert user_cache("x").parent.name.startswith("ncuflow-cache-")


def test_an_ncu_that_hangs_is_killed_at_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\nsleep 60 &\nwait\n")  # a child too: the whole group goes
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    started = time.monotonic()
    with pytest.raises(ProfileFailed, match="ncu did not finish within 1 s"):
        run_ncu([str(path)], lambda line: None, timeout_s=1.0)
    assert time.monotonic() - started < 10


def _chunked(
    tmp_path: Path, fail: set[int], calls: list[list[str]], explain: str = "none",
    tiers: list[str] | None = None, source: str = "none", processes: int = 1,
    on_gpu: list[tuple[str, float, float, float, float]] | None = None, chunk_size: int = 3,
    broken: int | None = None, dies_at_start: str | None = None,
) -> Path:  # fmt: skip
    """The profile stage over the ladder capture's naive variant, with ncu replaced by a
    stand-in profiler that serves each chunk the capture's values (or fails on chunks
    ``fail``). With ``processes`` above 1 it does what the worker does with its gates, and
    notes in ``on_gpu`` when it was started and when it held the GPU; the call ``broken``
    raises (the profiler itself broke, not ncu) after a moment; the chunk ``dies_at_start``
    fails before its worker reached its gate."""
    capture = ROOT / "resources" / "captures" / "h100-sxm" / "matmul_ladder" / "naive"
    plan = Plan.load(capture / "plan.json")
    plan = dataclasses.replace(plan, kernels_dir=str(ROOT / "kernels"))
    long = pd.read_parquet(capture / "ncu_long.parquet")
    (tmp_path / "plan.json").write_text(plan.to_json())
    (tmp_path / "measure.json").write_text((capture / "measure.json").read_text())

    def stand_in(
        base: Path, chunk: list[str], target: list[str], limit: float, tier: str = "sweep",
        tensor: tuple[str, ...] = TENSOR, after: Path | None = None,
    ) -> dict:  # fmt: skip
        members = {split_target(t)[0] for t in chunk}
        assert members == {"naive.p0"}  # one measure job: its variant and part
        ids = [split_target(t)[1] for t in chunk]
        assert target[:4] == worker_command(base.with_suffix(".work.json"))
        if base.name == dies_at_start:
            return {t: "ncu failed (exit code 9): ==ERROR== stand-in" for t in chunk}
        if processes > 1:  # the gate first: calls then come in the order the GPU took them
            started = time.monotonic()
            after, then = (None if g == "-" else Path(g) for g in target[4:6])
            while after is not None and not after.exists():
                assert time.monotonic() - started < 30, f"{after} never opened"
                time.sleep(0.01)
            gpu = time.monotonic()
            time.sleep(0.3)  # its launches
            assert on_gpu is not None
            on_gpu.append((base.name, started, gpu, time.monotonic(), limit))
            assert after == (None if target[4] == "-" else Path(target[4]))
        index = len(calls)
        calls.append(ids)
        if tiers is not None:
            tiers.append(tier)
        if index == broken:
            time.sleep(0.2)
            raise NcuflowError("the stand-in broke")
        if processes > 1:
            if index in fail:  # it died: its gate is the stage's to open
                return {t: "ncu failed (exit code 9): ==ERROR== stand-in" for t in chunk}
            then.touch()
        work = json.loads(base.with_suffix(".work.json").read_text())
        assert work == [{"member": "naive.p0", "plan": str(tmp_path / "plan.json"),
                         "measure": str(tmp_path / "measure.json"), "ids": ids}]  # fmt: skip
        if index in fail:
            return {t: "ncu failed (exit code 9): ==ERROR== stand-in" for t in chunk}
        values = long[long["config_id"].isin(ids)].copy()
        values["config_id"] = "naive.p0." + values["config_id"]
        write_long(values, base.with_suffix(".parquet"))
        metric = f"{tier}_metric"  # the explain tier's report has more columns
        rows = "".join(f'"0","{c}","1"\n' for c in chunk)
        base.with_suffix(".csv").write_text(f'"ID","Kernel Name","{metric}"\n"","","%"\n{rows}')
        return {}

    member = Member(tmp_path / "plan.json", tmp_path / "measure.json", tmp_path, "p0")
    settings = NcuSettings(chunk_size=chunk_size, explain=explain, source=source,
                           processes=processes)  # fmt: skip
    profile_stage([member], tmp_path / "chunks", settings,
                  lambda line: None, stand_in)  # fmt: skip
    return tmp_path / "ncu_long.parquet"


def test_the_explain_tier_profiles_the_fastest_configuration_of_each_size(
    tmp_path: Path,
) -> None:
    """... and only there, in chunks as the sweep's: the sweep profiles the others (of the
    naive variant's one tiling at four sizes, none), each configuration once."""
    calls: list[list[str]] = []
    tiers: list[str] = []
    out = _chunked(tmp_path, set(), calls, "best", tiers)
    assert tiers == ["explain", "explain"]  # chunks of 3 and 1
    records = read_records(tmp_path / "measure.json")
    plan = Plan.load(tmp_path / "plan.json")
    sizes = {row.config_id: row.dims["M"] for row in plan.configs}
    fastest = {}
    for config, record in records.items():
        size = sizes[config]
        if size not in fastest or record.time_ms < records[fastest[size]].time_ms:
            fastest[size] = config
    assert sorted(calls[0] + calls[1]) == sorted(fastest.values()) == sorted(records)
    assert set(pd.read_parquet(out)["config_id"]) == set(records)  # the explain tier's values
    for name in ("findings.parquet", "explain_long.parquet", "source_lines.parquet"):
        assert (tmp_path / name).is_file()  # empty where the stand-in wrote no report
    # explain: none profiles no second time, and leaves empty tables
    again: list[str] = []
    _chunked(tmp_path, set(), [], "none", again)
    assert again == ["sweep", "sweep"] and pd.read_parquet(tmp_path / "explain_long.parquet").empty


@pytest.mark.parametrize("mode", ["shortest", "longest"])
def test_the_source_tier_profiles_the_fastest_configuration_where_it_takes_least_or_longest(
    tmp_path: Path, mode: str
) -> None:
    """... with the explain tier's sections and its own; the explain tier the fastest of
    the other sizes; each configuration once."""
    calls: list[list[str]] = []
    tiers: list[str] = []
    _chunked(tmp_path, set(), calls, "best", tiers, source=mode)
    assert tiers == ["source", "explain"]
    records = read_records(tmp_path / "measure.json")
    pick = min if mode == "shortest" else max
    chosen = pick(records, key=lambda c: records[c].time_ms)
    assert calls[0] == [chosen] and sorted(calls[1]) == sorted(set(records) - {chosen})
    settings = NcuSettings(sections=("SpeedOfLight",))
    assert tier_sections(settings, "sweep") == ("SpeedOfLight",)
    assert tier_sections(settings, "source") == (
        "SpeedOfLight",
        *settings.explain_sections,
        *settings.source_sections,
    )


def test_what_the_explain_tier_could_not_profile_the_sweep_does(tmp_path: Path) -> None:
    """An explain tier's ncu fails (its first chunk of 3): those configurations are profiled
    by the sweep, and the raw CSV joins the reports' columns."""
    calls: list[list[str]] = []
    tiers: list[str] = []
    out = _chunked(tmp_path, {0}, calls, "best", tiers)
    assert tiers == ["explain", "explain", "sweep"] and calls[0] == calls[2]
    assert set(pd.read_parquet(out)["config_id"]) == set(calls[0] + calls[1])
    # each value names the tier whose report it came from (each numbers its own kernels)
    tier_of = pd.read_parquet(out).groupby("config_id")["tier"].unique()
    assert {c: list(t) for c, t in tier_of.items()} == {
        **{c: ["sweep"] for c in calls[0]}, **{c: ["explain"] for c in calls[1]}}  # fmt: skip
    assert set(pd.read_parquet(tmp_path / "explain_long.parquet")["tier"]) == {"explain"}
    assert json.loads((tmp_path / "profile_errors.json").read_text()) == {}
    with (tmp_path / "ncu_raw.csv").open() as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["ID", "Kernel Name", "explain_metric", "sweep_metric"]
    assert table[1] == ["", "", "%", "%"] and len(table) == 2 + 4


def test_profiling_goes_in_chunks_and_resumes_with_the_missing_ones(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    out = _chunked(tmp_path, {1}, calls)  # 4 configurations: chunks of 3 and 1
    assert [len(c) for c in calls] == [3, 1]
    errors = json.loads((tmp_path / "profile_errors.json").read_text())
    assert list(errors) == calls[1] and "stand-in" in errors[calls[1][0]]
    assert set(pd.read_parquet(out)["config_id"]) == set(calls[0])
    assert (tmp_path / "ncu_raw.csv").read_text().count('"ID"') == 1  # one header
    # an earlier run's chunks are kept: only the failed one is profiled again
    again: list[list[str]] = []
    out = _chunked(tmp_path, set(), again)
    assert again == [calls[1]]
    assert json.loads((tmp_path / "profile_errors.json").read_text()) == {}
    assert set(pd.read_parquet(out)["config_id"]) == set(calls[0] + calls[1])


def _ladder_members(
    tmp_path: Path, variants: tuple[str, ...]
) -> tuple[list[Member], dict[str, pd.DataFrame]]:
    """Measure jobs of the ladder capture's ``variants`` as one profile job's members, and
    each one's captured long table by member key."""
    capture = ROOT / "resources" / "captures" / "h100-sxm" / "matmul_ladder"
    members, longs = [], {}
    for variant in variants:
        folder = tmp_path / variant
        folder.mkdir()
        plan = dataclasses.replace(Plan.load(capture / variant / "plan.json"),
                                   kernels_dir=str(ROOT / "kernels"))  # fmt: skip
        (folder / "plan.json").write_text(plan.to_json())
        (folder / "measure.json").write_text((capture / variant / "measure.json").read_text())
        members.append(Member(folder / "plan.json", folder / "measure.json", folder / "out"))
        longs[f"{variant}.p0"] = pd.read_parquet(capture / variant / "ncu_long.parquet")
    return members, longs


def test_tensor_core_counters_are_asked_for_only_where_a_variant_computes_with_them(
    tmp_path: Path,
) -> None:
    """They cost replay passes: a chunk asks for those its variants need (CUDA-core
    variants none, a tensor-core variant its own precision's, a library baseline all), and
    configurations that need the same ones are chunked together, in as many chunks as the
    chunk size alone asks for."""
    assert set(required_metrics()) - set(required_metrics(())) == {
        m for p in TENSOR for m, _ in PRECISIONS[p].counts}  # fmt: skip
    fp16 = set(required_metrics(("tensor_fp16",)))
    assert "sm__ops_path_tensor_src_fp16.sum" in fp16
    assert "sm__ops_path_tensor_src_tf32_dst_fp32.sum" not in fp16
    members, _ = _ladder_members(tmp_path, ("naive", "wmma_fp16", "smem_tiled", "cublas_fp32"))
    asked: dict[tuple[str, ...], set[str]] = {}

    def stand_in(base: Path, chunk: list[str], target: list[str], limit: float,
                 tier: str = "sweep", tensor: tuple[str, ...] = TENSOR,
                 after: Path | None = None) -> dict:  # fmt: skip
        asked.setdefault(tensor, set()).update(split_target(t)[0] for t in chunk)
        return {t: "ncu failed (exit code 9): ==ERROR== stand-in" for t in chunk}

    assert [len(m.ids) for m in members] == [4, 8, 4, 4]  # four sizes; wmma_fp16 two tilings
    settings = NcuSettings(chunk_size=4, explain="none", source="none")
    profile_stage(members, tmp_path / "chunks", settings, lambda line: None, stand_in)
    assert asked == {(): {"naive.p0", "smem_tiled.p0"}, ("tensor_fp16",): {"wmma_fp16.p0"},
                     TENSOR: {"cublas_fp32.p0"}}  # fmt: skip
    asked.clear()  # one chunk for all: the counters any of them needs
    settings = NcuSettings(chunk_size=20, explain="none", source="none")
    profile_stage(members, tmp_path / "again", settings, lambda line: None, stand_in)
    assert asked == {TENSOR: {"naive.p0", "wmma_fp16.p0", "smem_tiled.p0", "cublas_fp32.p0"}}


def test_one_profile_job_shares_ncu_processes_between_variants(tmp_path: Path) -> None:
    """Two variants' measure jobs in one profile job: each chunk's ncu process launches
    configurations of both (their NVTX ranges name variant and part), and each job gets
    the values, CSV rows, errors and tables of its own configurations alone."""
    members, longs = _ladder_members(tmp_path, ("naive", "smem_tiled"))
    calls: list[list[str]] = []

    def stand_in(base: Path, chunk: list[str], target: list[str], limit: float,
                 tier: str = "sweep", tensor: tuple[str, ...] = TENSOR,
                 after: Path | None = None) -> dict:  # fmt: skip
        calls.append(chunk)
        work = json.loads(base.with_suffix(".work.json").read_text())
        assert [w["member"] for w in work] == sorted({split_target(t)[0] for t in chunk})
        frames, rows = [], []
        for kernel, t in enumerate(chunk, start=1):
            member, config = split_target(t)
            values = longs[member][longs[member]["config_id"] == config].copy()
            values["config_id"], values["kernel_id"] = t, kernel
            frames.append(values)
            rows.append(f'"{kernel - 1}","{t}","1"\n')
        write_long(pd.concat(frames), base.with_suffix(".parquet"))
        base.with_suffix(".csv").write_text('"ID","Kernel Name","m"\n"","","%"\n' + "".join(rows))
        if len(calls) == 2:  # the second ncu process fails
            return {t: "ncu failed (exit code 9): ==ERROR== stand-in" for t in chunk}
        return {}

    settings = NcuSettings(chunk_size=6, explain="none", source="none")
    profile_stage(members, tmp_path / "chunks", settings, lambda line: None, stand_in)
    assert [len(c) for c in calls] == [6, 2]  # 8 configurations in two ncu processes
    assert {split_target(t)[0] for t in calls[0]} == {"naive.p0", "smem_tiled.p0"}
    for member in members:
        records = read_records(member.measure_path)
        long = pd.read_parquet(member.out / "ncu_long.parquet")
        errors = json.loads((member.out / "profile_errors.json").read_text())
        with (member.out / "ncu_raw.csv").open() as handle:
            table = list(csv.reader(handle))
        shown = {row[1] for row in table[2:]}
        if member.plan.variant == "naive":  # its chunk profiled every one
            assert set(long["config_id"]) == set(records) and errors == {}
            assert shown == {f"naive.p0.{c}" for c in records}
        else:  # a failed chunk: its values are not kept, its configurations named
            assert set(errors) == set(records) - set(long["config_id"])
            assert len(errors) == 2 and "stand-in" in next(iter(errors.values()))
            assert shown == {f"smem_tiled.p0.{c}" for c in long["config_id"]} and shown
