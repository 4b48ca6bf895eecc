"""Processes a stage starts (its measuring worker, ncu and the worker ncu profiles) die
with it, however it ends.

Each child starts in its own process group (so that a hung one is killed with everything
it started) and is stopped with its group when the stage exits, is interrupted (Ctrl-C)
or terminated (SIGTERM, SIGHUP: what Snakemake sends a job it cancels). A stage killed
outright (SIGKILL) runs no code at all: there the kernel sends its children SIGKILL
(Linux's parent-death signal, which each worker also sets on itself, so that the process
ncu profiles dies with ncu). The files a stage holds locked (its GPU's slot) are passed to
its children, so that the lock is held until the last of them is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1  # prctl(2)
_children: list[subprocess.Popen] = []
_inherited: list[int] = []  # descriptors every child keeps open (the GPU slot's lock)


class Interrupted(Exception):
    """The stage was asked to stop (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)


def die_with_parent() -> None:
    """Have the kernel kill this process (SIGKILL) when its parent dies (Linux; elsewhere
    nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl here: the stage's own clean-up remains
        return


def keep_open(descriptor: int) -> None:
    """A descriptor every child keeps open: a lock it holds stays held while any lives."""
    _inherited.append(descriptor)


def close_kept(descriptor: int) -> None:
    """No longer pass ``descriptor`` to children (it is about to be closed)."""
    if descriptor in _inherited:
        _inherited.remove(descriptor)


def spawn(command: Sequence[str], **options: Any) -> subprocess.Popen:
    """Start a child in its own process group that dies with this process."""
    proc = subprocess.Popen(command, start_new_session=True, preexec_fn=die_with_parent,
                            pass_fds=tuple(_inherited), **options)  # fmt: skip
    _children.append(proc)
    return proc


def stop(proc: subprocess.Popen) -> None:
    """Kill a child with its whole process group, and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):  # gone between the two calls
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if proc in _children:
        _children.remove(proc)


def stop_all() -> None:
    """Kill every child still running (on the way out)."""
    for proc in list(_children):
        stop(proc)


def _interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def stop_on_signals() -> None:
    """From now on SIGINT, SIGTERM and SIGHUP raise Interrupted (the stage says what it
    kept and stops its children on the way out), and every exit stops the children."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    atexit.register(stop_all)
