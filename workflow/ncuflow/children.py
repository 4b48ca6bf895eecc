"""Processes a stage starts (its measuring worker, ncu) die with it, however it ends.

Each child starts in its own process group (so that a hung one is killed with everything
it started) and is stopped with its group when the stage exits, is interrupted (Ctrl-C)
or terminated (SIGTERM, SIGHUP: what Snakemake sends a job it cancels). A stage killed
outright (SIGKILL) runs no code at all: there Linux's parent-death signal stands in. Each
child is started through this file (``python children.py PARENT COMMAND...``), a small
supervisor that asks for SIGTERM when the stage dies, checks that its parent is still the
stage, then runs the command in its own process group and waits: on that signal it kills
the whole group. The group, not the command alone: ncu's launcher starts ncu, which
starts the profiled process, and neither would follow a signal sent to the launcher. The
stage forks nothing but this script (it has threads of CUDA's). The files a stage holds
locked (its GPU's slot) are passed down, so that the lock is held until the last of them
is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1  # prctl(2)
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_children: list[subprocess.Popen] = []
_inherited: list[int] = []  # descriptors every child keeps open (the GPU slot's lock)


class Interrupted(BaseException):
    """The stage was asked to stop (SIGINT, SIGTERM or SIGHUP). A BaseException, as
    KeyboardInterrupt is: library code's ``except Exception`` must not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)


def die_with_parent(signum: int) -> None:
    """Have the kernel send this process ``signum`` when its parent dies (Linux; elsewhere
    nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl here: the stage's own clean-up remains
        return


def pool_worker(stage: int) -> None:
    """The initializer of a stage's process pool (``initargs=(os.getpid(),)``): a worker
    dies with the stage that forked it, even one that died (a signal, as the pool started)
    before the worker came up. Else an orphaned worker waits for work forever, holding the
    run's lock and the pipe its run prints to."""
    die_with_parent(signal.SIGKILL)
    if os.getppid() != stage:
        os._exit(1)


def keep_open(descriptor: int) -> None:
    """A descriptor every child keeps open: a lock it holds stays held while any lives."""
    _inherited.append(descriptor)


def close_kept(descriptor: int) -> None:
    """No longer pass ``descriptor`` to children (it is about to be closed)."""
    if descriptor in _inherited:
        _inherited.remove(descriptor)


def spawn(command: Sequence[str], **options: Any) -> subprocess.Popen:
    """Start a child in its own process group that dies with this process."""
    launcher = [sys.executable, __file__, str(os.getpid())]  # stdlib only: runs as a script
    proc = subprocess.Popen([*launcher, *command], start_new_session=True,
                            pass_fds=tuple(_inherited), **options)  # fmt: skip
    _children.append(proc)
    return proc


def stop(proc: subprocess.Popen) -> None:
    """Kill a child with its whole process group (what it started too), and reap it."""
    if proc.returncode is None:  # not reaped yet: its process group is still its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with contextlib.suppress(ValueError):  # another thread's stop removed it first
        _children.remove(proc)


def stop_children() -> None:
    """Kill every child still running, with what it started."""
    for proc in list(_children):
        stop(proc)


def stop_all() -> None:
    """Kill every child still running (on the way out; a second Ctrl-C cannot cut it)."""
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    stop_children()


# A signal that arrives while Python runs a callback it cannot raise from (a weakref's, say
# importlib's module locks), or while a module is being imported, is sent again a moment
# later, when the stage is back in its own code. Raised inside an import, it would come out
# as the ImportError an extension module makes of any error in its start-up (numpy's
# "multiarray failed to import"), with a traceback, not as the one line Interrupted gives.
_REDELIVER_S = 0.05


def _redeliver(signum: int) -> None:
    timer = threading.Timer(_REDELIVER_S, os.kill, (os.getpid(), signum))
    timer.daemon = True  # a stage that ends before it fires has nothing left to stop
    timer.start()


def _importing(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _interrupted(signum: int, frame: Any) -> None:
    if _importing(frame):
        _redeliver(signum)
        return
    # one stop is enough: the next signal (Snakemake cancelling the job a Ctrl-C already
    # reached) must not cut short the clean-up and the line the first one starts
    for other in _SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


def _unraisable(args: Any) -> None:
    if isinstance(args.exc_value, Interrupted):  # it never reached the stage: listen again
        for signum in _SIGNALS:
            signal.signal(signum, _interrupted)
        _redeliver(signal.Signals[str(args.exc_value)])
        return
    sys.__unraisablehook__(args)


def stop_on_signals() -> None:
    """From now on SIGINT, SIGTERM and SIGHUP raise Interrupted (the stage says what it
    kept and stops its children on the way out), and every exit stops the children."""
    for signum in _SIGNALS:
        signal.signal(signum, _interrupted)
    sys.unraisablehook = _unraisable
    atexit.register(stop_all)


def _kill_group(signum: int, frame: Any) -> None:
    os.killpg(0, signal.SIGKILL)  # this supervisor and everything in its group


def supervise(parent: int, command: Sequence[str]) -> int:
    """Run ``command`` in this process's group until it ends, killing the group when the
    stage (``parent``) dies; its exit status, or -N where signal N ended it."""
    signal.signal(signal.SIGTERM, _kill_group)
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # the stage died before the signal was set
        return 1
    # close_fds off: this process holds only what the stage passed (the GPU slot's lock)
    return subprocess.Popen(command, close_fds=False).wait()


if __name__ == "__main__":  # spawn's launcher: python children.py PARENT COMMAND...
    status = supervise(int(sys.argv[1]), sys.argv[2:])
    if status < 0:  # ended by a signal: end by the same one, as the stage would see it
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)
