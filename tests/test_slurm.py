"""The Slurm path (profiles/slurm): the guide's Slurm command run as docs/guide.md writes it,
through a real cluster with Snakemake's Slurm executor; a partition that does not exist;
and, without a cluster, what the profile decides (workflow/ncuflow/slurm_profile.py).

The cluster tests are marked slurm and skip where no cluster answers or the executor plugin
is missing. A single-node cluster on this machine is enough: profiles/slurm/local_cluster.sh
sets one up without accounting, with the partition the guide's command names, and the
guide's command runs there unchanged: its words are taken from the first ``sh`` block of the
guide's "### Slurm" section, ``snakemake`` run as this interpreter's ``python -m snakemake``,
in a copy of the workflow."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from ncuflow.slurm_profile import OneLineSlurmErrors, refusal, status_command

GUIDE = ROOT / "docs" / "guide.md"
PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"


def guide_command() -> list[str]:
    """The words of the guide's Slurm command (the first ``sh`` block of its Slurm section)."""
    section = GUIDE.read_text().split("\n### Slurm\n", 1)[1].split("\n### ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "docs/guide.md's Slurm section has no sh block"
    words = shlex.split(block[1].replace("\\\n", " "))
    assert words[0] == "snakemake", words
    return words


def resource(words: list[str], name: str) -> str:
    """A resource's value among the command's --default-resources."""
    found = [w.split("=", 1)[1] for w in words if w.startswith(f"{name}=")]
    assert len(found) == 1, (name, words)
    return found[0]


def run(words: list[str], folder: Path, timeout: float) -> subprocess.CompletedProcess:
    """A ``snakemake ...`` command run in ``folder`` with this interpreter's Snakemake."""
    return subprocess.run([sys.executable, "-m", "snakemake", *words[1:]], cwd=folder,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def _no_cluster() -> str:
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "the Slurm executor plugin is not installed (pip install -e '.[slurm]')"
    if shutil.which("sinfo") is None:
        return "no Slurm here (sinfo is not on PATH)"
    nodes = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    if nodes.returncode != 0 or not re.search(r"idle|mixed", nodes.stdout):
        return f"no idle Slurm node answers ({(nodes.stderr or nodes.stdout).strip()[:200]})"
    return ""


def cluster_with_the_guides_partition() -> list[str]:
    """The guide's command, where a cluster answers (else the test skips) that has the
    partition the command names (else it fails: the guide's command would not run there)."""
    why = _no_cluster()
    if why:
        pytest.skip(why)
    words = guide_command()
    partition = resource(words, "slurm_partition")
    have = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True).stdout
    assert partition in have.split(), (
        f"the guide's Slurm command names partition {partition}, which this cluster lacks "
        f"(it has {' '.join(have.split())}): run profiles/slurm/local_cluster.sh again"
    )
    return words


def jobs_of_run(stderr: str) -> list[dict[str, str]]:
    """What Slurm holds of the run's jobs (scontrol, while MinJobAge keeps them listed)."""
    run_id = re.search(r"SLURM run ID: (\S+)", stderr)
    assert run_id, stderr[-2000:]
    listing = subprocess.run(["scontrol", "show", "job", "--oneliner"], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
    jobs = [dict(re.findall(r"([\w/:]+)=(\S*)", line)) for line in listing.splitlines()]
    return [job for job in jobs if job.get("JobName") == run_id[1]]


@pytest.mark.slurm
def test_the_guides_slurm_command_runs_to_the_end(workflow_copy: Path) -> None:
    words = cluster_with_the_guides_partition()
    # squeue where the cluster keeps no accounting (local_cluster.sh's: sacct would leave the
    # run waiting for ever), sacct where it does
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True)
    accounting = not re.search(
        r"AccountingStorageType\s*=\s*accounting_storage/none", config.stdout
    )
    assert status_command() == ("sacct" if accounting else "squeue")
    # what this test expects of the run is that study's: its jobs, its table
    assert words[words.index("--configfile") + 1] == "experiments/transpose.yaml", words
    started = time.monotonic()
    proc = run(words, workflow_copy, timeout=300)
    took = time.monotonic() - started
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
    # Each job asked for what the command line names and for what the profile sets per rule:
    # the command's --default-resources did not replace the profile's resources.
    asked = yaml.safe_load(PROFILE.read_text())["set-resources"]
    minutes = int(resource(words, "runtime"))
    jobs = jobs_of_run(proc.stderr)
    assert len(jobs) == 5, jobs
    for job in jobs:
        rule = re.match(r"rule_([a-z_]+?)(_wildcards_|$)", job["Comment"])[1]
        assert job["Partition"] == resource(words, "slurm_partition"), job
        assert job["MinMemoryNode"] == f"{asked[rule]['mem_mb']}M", job
        assert job["NumCPUs"] == str(asked[rule]["cpus_per_task"]), job
        assert job["TimeLimit"] == f"{minutes // 60:02d}:{minutes % 60:02d}:00", job
        gpus = "gres:gpu:1" if rule != "compile" else "(null)"
        assert job.get("TresPerJob", "(null)") == gpus, job
    assert "Unable to guess SLURM account" in proc.stderr  # said once, and the run went on
    assert proc.stderr.count("SLURM account") == 1, proc.stderr
    print(f"the guide's command through Slurm: {took:.0f} s")
    print(proc.stderr[-1500:])


@pytest.mark.slurm
def test_a_partition_that_does_not_exist_is_one_line_that_names_it(workflow_copy: Path) -> None:
    words = cluster_with_the_guides_partition()
    partition = resource(words, "slurm_partition")
    wrong = [w.replace(f"slurm_partition={partition}", "slurm_partition=no_such_partition")
             for w in words]  # fmt: skip
    started = time.monotonic()
    proc = run(wrong, workflow_copy, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode != 0
    said = [line for line in proc.stderr.splitlines() if "no_such_partition" in line]
    assert len(said) == 1, proc.stderr[-3000:]
    assert said[0].startswith("ncuflow: sbatch refused the job of rule "), said
    assert "invalid partition specified: no_such_partition" in said[0], said
    assert took < 60, f"{took:.0f} s"  # the first status check's wait, not minutes


def test_the_profile_sizes_every_job_that_goes_to_slurm() -> None:
    """set-resources names every rule that is not a localrule (a rule added to the workflow
    and not here would ask Slurm for one CPU and the cluster's default memory)."""
    rules = set()
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]:
        rules |= set(re.findall(r"^(?:rule|checkpoint) (\w+):", path.read_text(), re.M))
    block = re.search(r"^localrules:\n((?:    \w+,?\n)+)", (ROOT / "Snakefile").read_text(), re.M)
    assert block
    local = set(re.findall(r"\w+", block[1]))
    profile = yaml.safe_load(PROFILE.read_text())
    assert set(profile["set-resources"]) == rules - local
    # what a --default-resources on the command line replaces holds nothing else
    assert profile["default-resources"] == ["runtime=120"]


REFUSED = (
    "SLURM sbatch failed. The error message was 'sbatch: error: invalid partition specified: "
    "gpu\nsbatch: error: Batch job submission failed: Invalid partition name specified'.\n"
    '    sbatch call:\n        sbatch --parsable --job-name x -p gpu --wrap="..."\n'
)


NOT_SUBMITTED = (
    "Job submission failed with exception: The given account nosuch appears to be invalid. "
    "Available accounts:\nroot, researchFor further error details see the cluster/cloud log "
    "and the log files of the involved rule(s)."
)


def test_what_was_refused_is_one_line() -> None:
    assert refusal(REFUSED) == ("sbatch refused", "invalid partition specified: gpu; Batch job "
                                "submission failed: Invalid partition name specified")  # fmt: skip
    assert refusal(NOT_SUBMITTED) == (
        "the Slurm executor did not submit",
        "The given account nosuch appears to be invalid. Available accounts: root, research",
    )
    assert refusal("SLURM-job '12' failed, SLURM status is: 'FAILED'.") is None


def _record(msg: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("snakemake.logging", logging.ERROR, __file__, 0, msg, (), None)
    record.__dict__.update(extra)
    return record


class _Event:
    """A stand-in for Snakemake's LogEvent (the filter reads its value)."""

    def __init__(self, value: str) -> None:
        self.value = value


def test_refused_jobs_are_one_line_per_reason_and_other_errors_stay() -> None:
    keep = OneLineSlurmErrors()
    first = _record("Error in rule compile", event=_Event("job_error"), rule_name="compile",
                    rule_msg=REFUSED)  # fmt: skip
    assert keep.filter(first)
    assert first.msg == ("ncuflow: sbatch refused the job of rule compile: invalid partition "
                         "specified: gpu; Batch job submission failed: Invalid partition name "
                         "specified (docs/troubleshooting.md#slurm)")  # fmt: skip
    assert first.event is None  # printed as the line it is
    again = _record("Error in rule ceilings", event=_Event("job_error"), rule_name="ceilings",
                    rule_msg=REFUSED)  # fmt: skip
    assert not keep.filter(again)  # the same reason for another job: said once
    failed = _record("Error in rule measure", event=_Event("job_error"), rule_name="measure",
                     rule_msg="SLURM-job '12' failed, SLURM status is: 'FAILED'.")  # fmt: skip
    assert keep.filter(failed) and failed.event.value == "job_error"  # as Snakemake shows it
    assert not keep.filter(_record("No SLURM account given, trying to guess."))
    outcome = "Unable to guess SLURM account. Trying to proceed without."
    assert keep.filter(_record(outcome)) and not keep.filter(_record(outcome))
    assert keep.filter(_record("Job 7 has been submitted with SLURM jobid 171"))


def _fake_sacct(folder: Path, exit_code: int,
                said: str = "Slurm accounting storage is disabled") -> str:  # fmt: skip
    """A PATH whose sacct answers as a cluster's does: with accounting (0), without it (1 and
    that it is disabled), or with an accounting database that fails (1 and another error)."""
    script = folder / "sacct"
    script.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit {exit_code}\n")
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def test_the_status_command_is_squeue_where_sacct_has_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _fake_sacct(tmp_path, 1))
    assert status_command() == "squeue"
    monkeypatch.setenv("PATH", _fake_sacct(tmp_path, 0))
    assert status_command() == "sacct"
    # a database that is down for a while: the executor's to report, not a reason to poll
    # with squeue, which forgets a job that ended a while ago
    monkeypatch.setenv("PATH", _fake_sacct(tmp_path, 1, "slurmdbd: Connection refused"))
    assert status_command() == "sacct"
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no sacct at all
    assert status_command() == "squeue"
