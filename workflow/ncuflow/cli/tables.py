"""The commands of the rules that run on any machine: a search's round, the table, the
figures and the summaries, the device files."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

from ..children import pool_worker
from ..files import read_json
from ..ncu import NcuSettings
from ..vocab import ENERGY_FIGURE, SEARCH_FIGURE
from .args import Subparsers, mode_args, ncu_args, stage_parser


def _search(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..device.mode import resolve_mode
    from ..search.stage import search_stage
    from ..study.rounds import SearchSettings

    settings = SearchSettings.from_config(json.loads(args.settings))
    earlier = list(zip(args.earlier[::2], args.earlier[1::2], strict=True))
    replays = resolve_mode(args.mode, args.ncu)[0] == "replay" and args.capture is not None
    kept = (
        args.capture / args.out.parent.parent.name / "search" / args.out.name if replays else None
    )
    search_stage(settings, args.round, args.plans, earlier, args.ceilings, args.out, log, kept,
                 args.first, args.in_flight)  # fmt: skip


def _collect(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..analyze.collect import collect

    jobs = [tuple(map(Path, job)) for job in args.job]
    ncu = NcuSettings(sections=tuple(args.sections), clock_control=args.clock_control,
                      extra_metrics=tuple(args.metrics))  # fmt: skip
    replay = (args.capture, ncu.recorded()) if args.capture else None
    table = collect(args.experiment, jobs, args.device, args.out, replay, args.profile)  # type: ignore[arg-type]
    log(table["status"].value_counts().to_string())


def _plot(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import functools
    from concurrent.futures import ProcessPoolExecutor

    import pandas as pd

    from ..report.figures import FIGURES, draw_one, family_figure
    from ..spec import load_family

    table = pd.read_parquet(args.table)
    device = read_json(args.device)
    if args.figure == SEARCH_FIGURE:
        from ..report.search_report import search_progress

        rounds = [read_json(path, "a search round's proposals") for path in args.rounds]
        paths = search_progress(table, rounds, device, args.out_dir / SEARCH_FIGURE)
    elif args.figure == ENERGY_FIGURE:
        from ..report.energy import energy_figure
        from ..report.energy_tables import write_energy_table

        family = load_family(args.kernels_dir, str(table["family"].iloc[0]))
        paths = energy_figure(table, family, device, args.out_dir / ENERGY_FIGURE)
        write_energy_table(table, family, args.out_dir / f"{ENERGY_FIGURE}.csv")
    elif args.figure:
        family = load_family(args.kernels_dir, str(table["family"].iloc[0]))
        paths = family_figure(table, family, args.figure, device, args.out_dir / args.figure)
    else:  # the figures in worker processes where the job has cores to spare: a run's tail
        draw_each = functools.partial(draw_one, table, args.kernels_dir, device, args.out_dir,
                                      joined=not args.separate_sizes)  # fmt: skip
        if args.processes > 1:
            # forked: a worker's parent is this stage, whose death pool_worker watches
            workers = min(args.processes, len(FIGURES))
            context, stage = multiprocessing.get_context("fork"), os.getpid()
            with ProcessPoolExecutor(workers, mp_context=context, initializer=pool_worker,
                                     initargs=(stage,)) as pool:  # fmt: skip
                drawn = list(pool.map(draw_each, FIGURES))
        else:
            drawn = [draw_each(name) for name in FIGURES]
        paths = [path for figure_paths in drawn for path in figure_paths]
    for path in paths:
        log(f"wrote {path}")


def _devices(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..device.facts import write_devices

    for path in write_devices(args.jobs, args.out_dir):
        log(f"wrote {path}")


def _device_table(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from ..device.facts import facts_rows
    from ..report.tables import write_html_table

    rows = facts_rows(read_json(args.device))
    facts = pd.DataFrame(rows, columns=["fact", "value"])
    facts.to_csv(args.out, index=False)
    write_html_table(facts, args.out.with_suffix(".html"), "Device facts",
                     "The device the numbers come from, and the tools that took them.")  # fmt: skip
    log(f"wrote {args.out} and its page: {len(rows)} facts")


def _summary(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..report.summary_files import write_summary

    rounds = [read_json(path, "a search round's proposals") for path in args.rounds]
    log(write_summary(args.table, args.kernels_dir, args.findings, args.questions,
                      (args.csv, args.rungs, args.md), rounds))  # fmt: skip


def table_stages(sub: Subparsers) -> None:
    """The commands of the rules that read and write tables and figures, on any machine."""
    p = stage_parser(sub, "collect", _collect, "one table of an experiment's configurations")
    p.add_argument("--experiment", required=True)
    p.add_argument(
        "--job", nargs=3, action="append", required=True, metavar=("PLAN", "MEASURE", "METRICS")
    )
    p.add_argument("--device", type=Path, required=True, help="device.json")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--capture", type=Path, help="the capture a replay came from, to compare")
    ncu_args(p)  # this config's, compared with the capture's in a replay
    p.add_argument(
        "--profile",
        default="all",
        help="ncu.profile: which configurations ncu "
        "profiled (the others are not profiled by choice)",
    )
    p = stage_parser(sub, "search", _search, "a search round's proposals, from the rounds before")
    p.add_argument("--round", type=int, required=True)
    p.add_argument("--settings", required=True, help="the experiment's search section (JSON)")
    p.add_argument("--plans", type=Path, nargs="+", required=True, help="each variant's plan")
    p.add_argument(
        "--earlier",
        type=Path,
        nargs="*",
        default=[],
        help="plan.json and measure.json of each part of the rounds before",
    )
    p.add_argument("--ceilings", type=Path, help="the device's measured ceilings")
    p.add_argument("--first", type=Path, help="round 0's file: when the search began")
    p.add_argument("--in-flight", type=Path, help="the round file measured meanwhile")
    p.add_argument("--out", type=Path, required=True,
                   help="results/<experiment>/search/round<r>.json")  # fmt: skip
    mode_args(p)
    p = stage_parser(sub, "plot", _plot, "the experiment's figures (PNG and SVG)")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--device", type=Path, required=True)
    p.add_argument("--kernels-dir", type=Path, required=True)
    p.add_argument("--figure", help="one of the family's own figures, or a search's "
                   f"{SEARCH_FIGURE} (default: the standard ones)")  # fmt: skip
    p.add_argument("--rounds", type=Path, nargs="*", default=[], help="a search's round files")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--processes", type=int, default=1, help="draw the standard figures in so many")
    p.add_argument("--separate-sizes", action="store_true",
                   help="the sizes are separate problems (layers): never joined")  # fmt: skip
    p = stage_parser(
        sub, "devices", _devices, "results/devices/: one file per device the jobs ran on"
    )
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("jobs", type=Path, nargs="+", help="each measure job's device.json")
    p = stage_parser(
        sub, "device-table", _device_table, "the device's facts as a CSV table (report)"
    )
    p.add_argument("--device", type=Path, required=True, help="device.json")
    p.add_argument("--out", type=Path, required=True)
    p = stage_parser(
        sub, "summary", _summary, "the best configuration per variant and size (CSV, MD)"
    )
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--kernels-dir", type=Path, required=True)
    p.add_argument("--csv", type=Path, required=True)
    p.add_argument("--md", type=Path, required=True)
    p.add_argument("--findings", type=Path, required=True, help="the experiment's findings")
    p.add_argument("--rungs", type=Path, required=True, help="what changed between rungs (CSV)")
    p.add_argument("--questions", type=Path, help="the experiment's questions (JSON)")
    p.add_argument("--rounds", type=Path, nargs="*", default=[], help="a search's round files")
