"""One GPU per GPU job: a job that may use the GPU first claims one that no other ncuflow
job on this machine holds, and runs (with its workers and ncu) on it alone.

Snakemake runs at most ``--resources gpu=N`` GPU jobs at once but does not say which GPU
each should use. Each job therefore takes an exclusive lock (``flock``) on a file per GPU
in a machine-local folder, the first free one among the GPUs it may see
(``CUDA_VISIBLE_DEVICES`` where the scheduler set it, as Slurm does, else every GPU
``nvidia-smi`` lists), and narrows ``CUDA_VISIBLE_DEVICES`` to that GPU before CUDA is
initialised. The lock is held by the job's process and its workers (which inherit it, and
die with it: ncuflow.children) and released by the kernel when the last of them ends,
however it ends, so a killed job never keeps its GPU, and no other job takes it while a
worker of the killed one still runs on it. Locks are named by the GPU's UUID, so
jobs that see the same GPU under different indices (a Slurm job's GPU is always 0) agree.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..children import close_kept, keep_open

# Machine-local on purpose: jobs on other nodes of a cluster hold other GPUs.
SLOT_DIR = Path(tempfile.gettempdir()) / f"ncuflow-gpu-slots-{os.getuid()}"
_held: list[IO[str]] = []  # the claimed slot's open lock file, for the life of the process


def gpu_uuids() -> dict[str, str]:
    """nvidia-smi's GPUs, index -> UUID (none where nvidia-smi is absent or fails)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {}
    try:
        found = subprocess.run([smi, "--query-gpu=index,uuid", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if found.returncode != 0:
        return {}
    pairs = [line.split(",") for line in found.stdout.splitlines()]
    return {p[0].strip(): p[1].strip() for p in pairs if len(p) == 2}


def visible_gpus() -> list[tuple[str, str]]:
    """(the name CUDA_VISIBLE_DEVICES gives a GPU, its UUID) for each GPU this job may use."""
    uuids = gpu_uuids()
    if not uuids:
        return []
    named = os.environ.get("CUDA_VISIBLE_DEVICES")
    tokens = [t.strip() for t in named.split(",")] if named is not None else list(uuids)
    # an index names nvidia-smi's GPU of that index; a UUID (GPU-..., MIG-...) itself
    return [(t, uuids.get(t, t)) for t in tokens if t and not t.startswith("-")]


def claim_gpu(log: Callable[[str], None], poll_s: float = 1.0) -> str | None:
    """Pin this process and its children to the first GPU no other ncuflow job on this
    machine holds, waiting while all are held; its CUDA_VISIBLE_DEVICES name, or None on
    a machine without GPUs. Call before anything initialises CUDA."""
    gpus = visible_gpus()
    if not gpus:
        return None
    SLOT_DIR.mkdir(parents=True, exist_ok=True)
    waited = False
    while True:
        for token, uuid in gpus:
            handle = open(SLOT_DIR / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', uuid)}.lock", "a")  # noqa: SIM115
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            _held.append(handle)
            keep_open(handle.fileno())  # held until the job's workers are gone too
            os.environ["CUDA_VISIBLE_DEVICES"] = token
            log(f"GPU {token} ({uuid}), held by this job alone (lock in {SLOT_DIR})")
            return token
        if not waited:
            log(f"all {len(gpus)} GPUs this job may use are held by other ncuflow jobs; waiting")
            waited = True
        time.sleep(poll_s)


def release_gpu() -> None:
    """Give the claimed GPU back (a job that turned out to replay)."""
    while _held:
        handle = _held.pop()
        close_kept(handle.fileno())
        handle.close()
