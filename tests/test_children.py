"""A stage's children die with it, however it ends (ncuflow.children): a stage killed
outright takes its worker and what that started with it, and one that is interrupted or
cancelled stops its children's whole process groups and says in one line what it kept."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

STAGE = """
import subprocess, sys, time
from ncuflow.children import Interrupted, spawn, stop_on_signals
stop_on_signals()
try:  # as the command line runs a stage (ncuflow.cli.main)
    worker = spawn(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    print(worker.pid, worker.stdout.readline().strip(), flush=True)
    time.sleep(60)
except Interrupted as exc:
    print(f"stopped by {exc}", flush=True)
    sys.exit(130)
"""


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether a process has ended (a zombie no parent reaps counts as ended)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _stage() -> tuple[subprocess.Popen, int, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    stage = subprocess.Popen([sys.executable, "-c", STAGE], stdout=subprocess.PIPE, text=True,
                             env=env, start_new_session=True)  # fmt: skip
    worker, grandchild = (int(p) for p in stage.stdout.readline().split())
    return stage, worker, grandchild


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_a_stage_killed_outright_takes_its_worker_with_it() -> None:
    stage, worker, grandchild = _stage()
    os.kill(stage.pid, signal.SIGKILL)
    stage.wait()
    # what the child started itself too (as ncu's launcher starts ncu, and ncu the worker)
    assert _gone(worker) and _gone(grandchild), "a child outlived its stage"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stage_cancelled_stops_every_child_and_says_so(signum: int) -> None:
    stage, worker, grandchild = _stage()
    os.kill(stage.pid, signum)
    out, _ = stage.communicate(timeout=10)
    assert stage.returncode == 130 and f"stopped by {signal.Signals(signum).name}" in out
    assert _gone(worker) and _gone(grandchild), "a child outlived its stage"


CALLBACK = """
import os, signal, sys, time, weakref
from ncuflow.children import Interrupted, stop_on_signals
stop_on_signals()
class Thing:
    pass
try:
    thing = Thing()
    # the signal arrives while Python runs a weakref callback, which cannot raise
    watch = weakref.ref(thing, lambda ref: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.01)))
    del thing
    time.sleep(10)
except Interrupted as exc:
    print(f"stopped by {exc}", flush=True)
    sys.exit(130)
"""


def test_a_signal_that_lands_in_a_callback_still_stops_the_stage_quietly() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", CALLBACK], capture_output=True, text=True,
                          env=env, timeout=30)  # fmt: skip
    assert done.returncode == 130 and done.stdout == "stopped by SIGINT\n", done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - started < 8


IMPORTING = """
import sys, time
from ncuflow.children import Interrupted, stop_on_signals
stop_on_signals()
try:
    import slow_module  # Ctrl-C comes half-way through its import
    print(f"imported {slow_module.VALUE}", flush=True)
    time.sleep(10)
except Interrupted as exc:
    print(f"stopped by {exc}", flush=True)
    sys.exit(130)
"""


def test_a_signal_during_an_import_stops_the_stage_after_it_not_inside(tmp_path: Path) -> None:
    # inside, an extension module's start-up would turn it into an ImportError traceback
    (tmp_path / "slow_module.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
        "for _ in range(20):\n    time.sleep(0.01)\nVALUE = 1\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'workflow'}{os.pathsep}{tmp_path}"}
    done = subprocess.run([sys.executable, "-c", IMPORTING], capture_output=True, text=True,
                          env=env, timeout=30)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stdout == "imported 1\nstopped by SIGINT\n" and "Traceback" not in done.stderr


TWICE = """
import os, signal, sys, time
from ncuflow.children import Interrupted, stop_on_signals
stop_on_signals()
try:
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
    time.sleep(10)
except Interrupted as exc:
    os.kill(os.getpid(), signal.SIGTERM)  # then Snakemake cancelling the job, mid clean-up
    time.sleep(0.2)
    print(f"stopped by {exc}", flush=True)
    sys.exit(130)
"""


def test_a_second_signal_does_not_cut_the_first_ones_clean_up_short() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    done = subprocess.run([sys.executable, "-c", TWICE], capture_output=True, text=True,
                          env=env, timeout=30)  # fmt: skip
    assert done.returncode == 130 and done.stdout == "stopped by SIGINT\n", done.stderr
    assert "Traceback" not in done.stderr


POOL = """
import os
from concurrent.futures import ProcessPoolExecutor
from ncuflow.children import pool_worker

def pid(_):
    return os.getpid()

pool = ProcessPoolExecutor(2, initializer=pool_worker, initargs=(os.getpid(),))
print(*sorted(set(pool.map(pid, range(8)))), flush=True)
os._exit(0)  # gone without shutting its pool down, as a stage a signal ended mid-map
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_a_stages_pool_workers_die_with_it() -> None:
    """An orphaned pool worker waits for work forever, holding the run's lock and the pipe
    its run prints to; the pools of the plot and compile stages are started so none is."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    stage = subprocess.run([sys.executable, "-c", POOL], capture_output=True, text=True,
                           env=env, timeout=60)  # fmt: skip
    workers = [int(p) for p in stage.stdout.split()]
    assert workers and all(_gone(p) for p in workers), stage.stderr
