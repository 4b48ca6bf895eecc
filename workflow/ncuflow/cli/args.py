"""What every command's parser shares: a stage's subcommand with its log, and the ncu
settings a profile and a collect are given."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..ncu import NcuSettings

Subparsers = Any  # argparse's _SubParsersAction, which it does not export


def stage_parser(sub: Subparsers, name: str, run: Callable, help_text: str,
           aliases: Sequence[str] = ()) -> argparse.ArgumentParser:  # fmt: skip
    p = sub.add_parser(name, help=help_text, aliases=list(aliases))
    p.set_defaults(run=run, stage=name)
    p.add_argument("--log", type=Path, help="append the stage's details here")
    return p


def ncu_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sections", nargs="*", default=[])
    p.add_argument("--clock-control", default=NcuSettings.clock_control)
    p.add_argument("--metrics", nargs="*", default=[])


def mode_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=["auto", "gpu", "replay"], required=True,
                   help="auto: gpu where the job finds a GPU and ncu, else replay")  # fmt: skip
    p.add_argument("--capture", type=Path, help="capture folder (replay)")
    p.add_argument("--ncu", default=NcuSettings.path, help="ncu executable (gpu)")
