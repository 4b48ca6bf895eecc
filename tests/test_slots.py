"""One GPU per GPU job (ncuflow.runners.slots), on a CPU machine: a stand-in nvidia-smi lists two
GPUs, and jobs are processes that claim one and hold it."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncuflow.runners import slots

CLAIM = """
import os, sys, time
from ncuflow.runners import slots
token = slots.claim_gpu(lambda line: print(line, flush=True), poll_s=0.05)
print("claimed", token, os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
time.sleep(float(sys.argv[1]))
"""


@pytest.fixture
def two_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """PATH with an nvidia-smi that lists GPUs 0 and 1; TMPDIR (where the locks go) fresh."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\nprintf '0, GPU-aaaa\\n1, GPU-bbbb\\n'\n")
    smi.chmod(0o755)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}",
           "TMPDIR": str(tmp_path / "tmp")}  # fmt: skip
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def _job(env: dict[str, str], hold_s: float, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLAIM, str(hold_s)], env={**env, **extra},
                            stdout=subprocess.PIPE, text=True)  # fmt: skip


def _claimed(job: subprocess.Popen) -> tuple[list[str], str]:
    """The lines a job printed up to its claim, and the GPU it claimed."""
    lines = []
    while not (line := job.stdout.readline()).startswith("claimed"):
        assert line, "the job ended without claiming a GPU"
        lines.append(line)
    _, token, visible = line.split()
    assert token == visible  # CUDA_VISIBLE_DEVICES narrowed to that GPU alone
    return lines, token


def test_jobs_hold_different_gpus_and_a_killed_job_frees_its_own(two_gpus: dict) -> None:
    first, second = _job(two_gpus, 60), _job(two_gpus, 60)
    gpus = {_claimed(first)[1], _claimed(second)[1]}
    assert gpus == {"0", "1"}
    third = _job(two_gpus, 0)
    time.sleep(0.5)
    assert third.poll() is None  # both GPUs held: it waits
    first.send_signal(signal.SIGKILL)  # however a job ends, its GPU comes back
    first.wait()
    lines, token = _claimed(third)
    assert "held by other ncuflow jobs; waiting" in "".join(lines)
    assert token in gpus and third.wait(timeout=30) == 0
    second.kill()
    second.wait()


def test_a_gpu_is_the_same_whether_named_by_index_or_uuid(two_gpus: dict) -> None:
    holder = _job(two_gpus, 60, CUDA_VISIBLE_DEVICES="0")
    assert _claimed(holder)[1] == "0"
    by_uuid = _job(two_gpus, 0, CUDA_VISIBLE_DEVICES="GPU-aaaa")  # the same GPU
    time.sleep(0.5)
    assert by_uuid.poll() is None
    other = _job(two_gpus, 0, CUDA_VISIBLE_DEVICES="1")  # a scheduler's choice is kept
    assert _claimed(other)[1] == "1" and other.wait(timeout=30) == 0
    holder.kill()
    holder.wait()
    assert _claimed(by_uuid)[1] == "GPU-aaaa" and by_uuid.wait(timeout=30) == 0


def test_a_machine_without_gpus_claims_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert slots.claim_gpu(lambda line: None) is None
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_each_device_the_jobs_ran_on_gets_its_own_facts(tmp_path: Path) -> None:
    from ncuflow.device.facts import write_devices

    jobs = []
    for i, device in enumerate(["NVIDIA H200 (GPU-aaaa)", "NVIDIA H200 (GPU-bbbb)",
                                "NVIDIA H200 (GPU-aaaa)", "host: AMD EPYC 9654"]):  # fmt: skip
        job = tmp_path / "results" / "e" / f"v{i}" / "p0" / "device.json"
        job.parent.mkdir(parents=True)
        job.write_text(json.dumps({"device": device, "sm_count": 132, "ceilings": {"x": 1}}))
        jobs.append(job)
    written = write_devices(jobs, tmp_path / "devices")
    names = sorted(p.name for p in written)
    assert names == ["NVIDIA_H200__GPU-aaaa.json", "NVIDIA_H200__GPU-bbbb.json",
                     "host__AMD_EPYC_9654.json"]  # fmt: skip
    first = json.loads((tmp_path / "devices" / names[0]).read_text())
    assert first["jobs"] == [str(jobs[0].parent), str(jobs[2].parent)]
    assert first["sm_count"] == 132 and "ceilings" not in first
