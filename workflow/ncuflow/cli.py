"""``ncuflow <command>`` (or ``python -m ncuflow``): each Snakemake rule runs one of these
commands; ``compare`` and ``capture`` are for people.

Errors a user can fix are printed as one line (no traceback) and exit with status 1;
the details of each stage go to its log file.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from . import __version__
from .errors import NcuflowError


def _logger(path: Path | None) -> Callable[[str], None]:
    if path is None:
        return lambda line: print(line)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a")  # noqa: SIM115 - kept open for the life of the stage

    def log(line: str) -> None:
        handle.write(line.rstrip("\n") + "\n")
        handle.flush()

    return log


def _resolve(args: argparse.Namespace, log: Callable[[str], None], exclusive: bool = True) -> str:
    """gpu or replay, decided here, in the job, by what this machine has (mode: auto), or
    as the config says; the capture must exist for a replay. An ``exclusive`` job (one
    that measures) first claims a GPU of its own (ncuflow.slots)."""
    from .device import resolve_mode
    from .replay import checked_capture
    from .slots import claim_gpu, release_gpu

    if exclusive and args.mode != "replay":  # before CUDA starts: a GPU no other job holds
        claim_gpu(log)
    mode, why = resolve_mode(args.mode, args.ncu)
    log(f"mode {mode}: {why}")
    if mode == "replay":
        release_gpu()
        if args.capture is None:
            raise NcuflowError(
                "this job replays, but no capture was named (capture: in the config)"
            )
        args.capture = checked_capture(args.capture)
    return mode


def _on_gpu(plan: dict) -> bool:
    """Whether a plan's variant runs on the GPU: a host variant's job holds no GPU."""
    from .vocab import plan_variant

    return plan_variant(plan)[1].runs_on == "gpu"


def _measure(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    plan = json.loads(args.plan.read_text())
    on_gpu = _on_gpu(plan)
    if _resolve(args, log, exclusive=on_gpu) == "replay":
        from .replay import replay_device, replay_measure

        replay_measure(plan, args.capture, args.out, log)
        replay_device(args.capture, args.device_out)
    else:
        from .device import facts_differences, job_device, write
        from .harness import measure_stage

        here = job_device("gpu" if on_gpu else "cpu")
        write(args.device_out, here)
        if on_gpu:
            for line in facts_differences(plan.get("device_facts", {}), here):
                log(line)
                print(f"ncuflow: warning: {line}", file=sys.stderr)
        measure_stage(args.plan, args.out, log)


def _profile(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from .derive import config_metrics

    plan = json.loads(args.plan.read_text())
    if _resolve(args, log, exclusive=_on_gpu(plan)) == "replay":
        from .replay import replay_profile

        replay_profile(plan, args.measure, args.capture, args.long, log)
        if args.csv:  # a capture keeps the exact values, not ncu's rounded CSV
            args.csv.write_text(f"# replayed from capture {args.capture.name}: no ncu CSV\n")
    else:
        from .profile import NcuSettings, profile_stage

        settings = NcuSettings(args.ncu, tuple(args.sections), args.clock_control,
                               tuple(args.metrics), args.chunk_size)  # fmt: skip
        profile_stage(args.plan, args.measure, args.long, args.csv, settings, log)
    if args.derived:
        metrics = config_metrics(pd.read_parquet(args.long))
        metrics.to_parquet(args.derived, index=False)
        log(f"the registry's columns of {len(metrics)} configurations in {args.derived}")


def _collect(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .collect import collect
    from .replay import ncu_settings

    jobs = [tuple(map(Path, job)) for job in args.job]
    ncu = ncu_settings(args.sections, args.clock_control, args.metrics)
    replay = (args.capture, ncu) if args.capture else None
    table = collect(args.experiment, jobs, args.device, args.out, replay)  # type: ignore[arg-type]
    log(table["status"].value_counts().to_string())


def _plot(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import functools
    from concurrent.futures import ProcessPoolExecutor

    import pandas as pd

    from .plots import FIGURES, draw_one, family_figure
    from .spec import load_family

    table = pd.read_parquet(args.table)
    device = json.loads(args.device.read_text())
    if args.figure:
        family = load_family(args.kernels_dir, str(table["family"].iloc[0]))
        paths = family_figure(table, family, args.figure, device, args.out_dir / args.figure)
    else:  # the figures in worker processes where the job has cores to spare: a run's tail
        draw_each = functools.partial(draw_one, table, args.kernels_dir, device, args.out_dir)
        if args.processes > 1:
            with ProcessPoolExecutor(min(args.processes, len(FIGURES))) as pool:
                drawn = list(pool.map(draw_each, FIGURES))
        else:
            drawn = [draw_each(name) for name in FIGURES]
        paths = [path for figure_paths in drawn for path in figure_paths]
    for path in paths:
        log(f"wrote {path}")


def _device(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    if _resolve(args, log, exclusive=False) == "replay":  # facts only: any GPU will do
        from .replay import replay_device

        replay_device(args.capture, args.out)
    else:
        from .device import gpu_facts, write

        ceilings = json.loads(args.ceilings.read_text())
        write(args.out, {**gpu_facts(args.ncu), "ceilings": ceilings})
    log(args.out.read_text())


def _devices(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .device import write_devices

    for path in write_devices(args.jobs, args.out_dir):
        log(f"wrote {path}")


def _device_table(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from .device import facts_rows

    rows = facts_rows(json.loads(args.device.read_text()))
    pd.DataFrame(rows, columns=["fact", "value"]).to_csv(args.out, index=False)
    log(f"wrote {args.out}: {len(rows)} facts")


def _summary(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from .spec import load_family
    from .summary import markdown, summarize

    table = pd.read_parquet(args.table)
    family = load_family(args.kernels_dir, str(table["family"].iloc[0]))
    summary = summarize(table, family)
    summary.to_csv(args.csv, index=False, float_format="%.6g")
    args.md.write_text(markdown(summary, family, str(table["experiment"].iloc[0])))
    log(f"wrote {args.csv} and {args.md}: {len(summary)} rows")


def _ceilings(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    if _resolve(args, log) == "replay":
        from .replay import replay_ceilings

        replay_ceilings(args.capture, args.out)
    else:
        from .ceilings import measure_ceilings

        measured = measure_ceilings(log)
        args.out.write_text(json.dumps(measured, indent=1, sort_keys=True) + "\n")


def _compare(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .compare import run

    for path in run(args.a, args.b, args.out):
        log(f"wrote {path}")


def _capture(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .config import load_study
    from .replay import ncu_settings, save_capture
    from .strict import read_config

    config = read_config(args.configfile)
    study = load_study(config, args.configfile.resolve().parent)
    command = f"snakemake --configfile {args.configfile} --config mode=gpu"
    ncu = study.config["ncu"]
    settings = ncu_settings(ncu["sections"], ncu["clock_control"], ncu["extra_metrics"])
    jobs = [(e, v, study.parts(e, v)) for e, v in study.jobs()]
    folder = save_capture(args.results, Path("."), args.name, jobs, command, settings)
    log(f"saved capture {args.name} in {folder}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ncuflow", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"ncuflow {__version__}")
    sub = parser.add_subparsers(dest="stage", required=True)

    def stage(name: str, run: Callable, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(run=run)
        p.add_argument("--log", type=Path, help="append the stage's details here")
        return p

    def mode_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--mode", choices=["auto", "gpu", "replay"], required=True,
                       help="auto: gpu where the job finds a GPU and ncu, else replay")  # fmt: skip
        p.add_argument("--capture", type=Path, help="capture folder (replay)")
        p.add_argument("--ncu", default="ncu", help="ncu executable (gpu)")

    def ncu_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--sections", nargs="*", default=[])
        p.add_argument("--clock-control", default="none")
        p.add_argument("--metrics", nargs="*", default=[])

    p = stage("measure", _measure, "compile, check and time every configuration of a plan")
    p.add_argument("--plan", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device-out", type=Path, required=True,
                   help="the facts of the GPU (or host) this job ran on")  # fmt: skip
    mode_args(p)
    p = stage("profile", _profile, "profile a plan's configurations, a chunk per ncu process")
    p.add_argument("--plan", type=Path, required=True)
    p.add_argument("--measure", type=Path, required=True)
    p.add_argument("--long", type=Path, required=True, help="exact values, Parquet")
    p.add_argument("--csv", type=Path, help="ncu's raw CSV export (gpu)")
    p.add_argument("--chunk-size", type=int, default=16, help="configurations per ncu process")
    p.add_argument("--derived", type=Path, help="the registry's columns per configuration, here")
    ncu_args(p)
    mode_args(p)
    p = stage("collect", _collect, "one table of an experiment's configurations")
    p.add_argument("--experiment", required=True)
    p.add_argument(
        "--job", nargs=3, action="append", required=True, metavar=("PLAN", "MEASURE", "METRICS")
    )
    p.add_argument("--device", type=Path, required=True, help="device.json")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--capture", type=Path, help="the capture a replay came from, to compare")
    ncu_args(p)  # this config's, compared with the capture's in a replay
    p = stage("plot", _plot, "the experiment's figures (PNG and SVG)")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--device", type=Path, required=True)
    p.add_argument("--kernels-dir", type=Path, required=True)
    p.add_argument("--figure", help="one of the family's own figures (default: the standard ones)")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--processes", type=int, default=1, help="draw the standard figures in so many")
    p = stage("device", _device, "write device.json")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--ceilings", type=Path, help="ceilings.json measured on this device (gpu)")
    mode_args(p)
    p = stage("devices", _devices, "results/devices/: one file per device the jobs ran on")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("jobs", type=Path, nargs="+", help="each measure job's device.json")
    p = stage("device-table", _device_table, "the device's facts as a CSV table (for the report)")
    p.add_argument("--device", type=Path, required=True, help="device.json")
    p.add_argument("--out", type=Path, required=True)
    p = stage("summary", _summary, "the best configuration per variant and size (CSV, Markdown)")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--kernels-dir", type=Path, required=True)
    p.add_argument("--csv", type=Path, required=True)
    p.add_argument("--md", type=Path, required=True)
    p = stage("ceilings", _ceilings, "measure the device's bandwidth and FLOP ceilings")
    p.add_argument("--out", type=Path, required=True)
    mode_args(p)
    p = stage("compare", _compare, "two runs or captures, configuration by configuration")
    p.add_argument("a", type=Path, help="results folder or capture: the baseline (A)")
    p.add_argument("b", type=Path, help="results folder or capture: the one compared (B)")
    p.add_argument("--out", type=Path, default=Path("results/compare"))
    p = stage("capture", _capture, "save a GPU run's records as a replay capture")
    p.add_argument("name", help="folder name under resources/captures/")
    p.add_argument("--configfile", type=Path, default=Path("config.yaml"))
    p.add_argument("--results", type=Path, default=Path("results"))
    return parser


def _flat(args: Iterable[object]) -> list[str]:
    out: list[str] = []
    for arg in args:
        out += _flat(arg) if isinstance(arg, list | tuple) else [str(arg)]
    return out


def command_line(name: str, *args: object) -> str:
    """A stage's command line for a Snakemake rule's shell: every word quoted
    (shlex.quote), so that a value from a config is one argument whatever it holds, never
    shell syntax. Lists among ``args`` are spread."""
    words = [sys.executable, "-m", "ncuflow", name, *_flat(args)]
    return " ".join(shlex.quote(word) for word in words)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = _logger(args.log)
    try:
        args.run(args, log)
    except NcuflowError as exc:  # one line, in the log too
        log(f"ncuflow: {exc}")
        print(f"ncuflow: {exc}", file=sys.stderr)
        return 1
    except Exception:  # a bug: its traceback, in the log too
        log(traceback.format_exc())
        raise
    return 0
