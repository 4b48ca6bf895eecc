"""Through a real Slurm cluster with Snakemake's Slurm executor (profiles/slurm), in replay
mode: a single-node cluster on this machine is enough (profiles/slurm/local_cluster.sh).
Marked slurm; it skips where no cluster answers or the executor plugin is missing."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slurm


def _no_cluster() -> str:
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "the Slurm executor plugin is not installed (pip install -e '.[slurm]')"
    if shutil.which("sinfo") is None:
        return "no Slurm here (sinfo is not on PATH)"
    nodes = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    if nodes.returncode != 0 or not re.search(r"idle|mixed", nodes.stdout):
        return f"no idle Slurm node answers ({(nodes.stderr or nodes.stdout).strip()[:200]})"
    return ""


def test_the_gpu_stages_are_slurm_jobs_and_the_rest_runs_here(workflow_copy: Path) -> None:
    why = _no_cluster()
    if why:
        pytest.skip(why)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--workflow-profile", "profiles/slurm",
         "--configfile", "experiments/transpose.yaml", "--config", "mode=replay",
         # a cluster without accounting: no account to charge, squeue for job states
         "--slurm-no-account", "--slurm-status-command", "squeue",
         "--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2",
         "--default-resources", "cpus_per_task=1", "mem_mb=1000", "runtime=10"],
        cwd=workflow_copy, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    submitted = re.findall(r"has been submitted with SLURM jobid \d+ \(log: \S+/rule_(\w+)/",
                           proc.stderr)  # fmt: skip
    # the 3 variants compiled, measured and profiled in one batch on cluster nodes, the
    # ceilings and the device's facts; the copies of each variant's files, collect, plot and
    # summary here
    assert sorted(submitted) == sorted(["compile", "measure", "profile", "ceilings",
                                        "device_facts"])  # fmt: skip
    table = pd.read_parquet(workflow_copy / "results" / "transpose" / "table.parquet")
    assert len(table) == 30 and (table["status"] == "ok").all()
    print(proc.stderr[-1500:])
