"""``ncuflow <command>`` (or ``python -m ncuflow``): each Snakemake rule runs one of these
commands; ``compare`` and ``capture`` are for people.

Errors a user can fix are printed as one line (no traceback) and exit with status 1;
the details of each stage go to its log file.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .children import Interrupted, stop_on_signals
from .errors import NcuflowError
from .files import atomic_write, local_path, read_json
from .ncu import NcuSettings
from .plan import Job, Plan
from .runlock import hold_for_run
from .runlog import record_stage
from .vocab import COMPILED_ENV, CUBINS, MEASURE, METRICS, NCU_LONG, PLAN, VERSION

if TYPE_CHECKING:
    from .runners import Runner


def _logger(path: Path | None) -> Callable[[str], None]:
    if path is None:
        return lambda line: print(line)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a")  # noqa: SIM115 - kept open for the life of the stage

    def log(line: str) -> None:
        handle.write(line.rstrip("\n") + "\n")
        handle.flush()

    return log


def _runner(args: argparse.Namespace, log: Callable[[str], None], exclusive: bool) -> Runner:
    """The runner of this job (runners.open_runner): gpu or replay."""
    from .runners import open_runner

    given = NcuSettings()  # what a stage without ncu arguments leaves at its defaults
    ncu = NcuSettings(args.ncu, tuple(getattr(args, "sections", given.sections)),
                      getattr(args, "clock_control", given.clock_control),
                      tuple(getattr(args, "metrics", given.extra_metrics)),
                      getattr(args, "chunk_size", given.chunk_size),
                      getattr(args, "explain", given.explain),
                      tuple(getattr(args, "explain_sections", given.explain_sections)),
                      getattr(args, "source", given.source),
                      tuple(getattr(args, "source_sections", given.source_sections)),
                      getattr(args, "threads", given.processes))  # fmt: skip
    return open_runner(args.mode, ncu, args.capture, log, exclusive)


def _job(plan_path: Path) -> tuple[Plan, bool]:
    """A job's plan, and whether its variant runs on the GPU (a host variant's job holds
    no GPU)."""
    from .spec import load_variant

    plan = Plan.load(plan_path)
    variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)[1]
    return plan, variant.runs_on == "gpu"


def _compile(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .compile.stage import compile_stage, gpu_arch

    if args.mode == "replay":  # nothing runs, nothing to build
        log("replay: nothing to compile")
        atomic_write(args.out, '{"arch": null, "cubins": {}}')
        return
    jobs = [(Path(plan), part) for plan, part in args.job]
    compile_stage(jobs, args.out, args.cache, args.arch or gpu_arch(), args.workers, log)


def _compiled(args: argparse.Namespace) -> None:
    """The compile stage's index, for this stage's workers (compile.cubins)."""
    if args.compiled is not None:
        os.environ[COMPILED_ENV] = str(args.compiled.resolve())


def _measure(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .study.config import part_plan

    _compiled(args)

    jobs = []
    for variant_plan, part in args.job:  # each job's part of its variant's plan, expanded here
        plan = part_plan(Path(variant_plan), part)
        folder = args.out / plan.variant / part
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / PLAN, plan.to_json())
        jobs.append(Job(folder / PLAN, folder / MEASURE, folder, part))
    on_gpu = any(_job(job.plan_path)[1] for job in jobs)
    _runner(args, log, exclusive=on_gpu).measure(jobs, args.journal, log)


def _profile(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from .analyze.derive import config_metrics
    from .profile.members import Member

    if len(args.plans) != len(args.measures):
        raise NcuflowError("profile: give as many --measures as --plans, in the same order")
    members = []
    for plan, measure in zip(args.plans, args.measures, strict=True):
        # results/<experiment>/<variant>/<part>/plan.json; a plan elsewhere is a whole variant
        part = plan.parent.name if re.fullmatch(r"p[0-9]+", plan.parent.name) else "p0"
        job = Plan.load(plan)
        members.append(Member(plan, measure, args.out / job.variant / part, part))
    on_gpu = any(_job(plan)[1] for plan in args.plans)
    _compiled(args)
    _runner(args, log, exclusive=on_gpu).profile(members, args.chunks, log)
    for member in members:
        metrics = config_metrics(pd.read_parquet(member.out / NCU_LONG))
        metrics.to_parquet(member.out / METRICS, index=False)
    log(f"the registry's columns of {len(members)} jobs' configurations written")


def _collect(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .analyze.collect import collect

    jobs = [tuple(map(Path, job)) for job in args.job]
    ncu = NcuSettings(sections=tuple(args.sections), clock_control=args.clock_control,
                      extra_metrics=tuple(args.metrics))  # fmt: skip
    replay = (args.capture, ncu.recorded()) if args.capture else None
    table = collect(args.experiment, jobs, args.device, args.out, replay)  # type: ignore[arg-type]
    log(table["status"].value_counts().to_string())


def _plot(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import functools
    from concurrent.futures import ProcessPoolExecutor

    import pandas as pd

    from .report.figures import FIGURES, draw_one, family_figure
    from .spec import load_family

    table = pd.read_parquet(args.table)
    device = read_json(args.device)
    if args.figure:
        family = load_family(args.kernels_dir, str(table["family"].iloc[0]))
        paths = family_figure(table, family, args.figure, device, args.out_dir / args.figure)
    else:  # the figures in worker processes where the job has cores to spare: a run's tail
        draw_each = functools.partial(draw_one, table, args.kernels_dir, device, args.out_dir,
                                      joined=not args.separate_sizes)  # fmt: skip
        if args.processes > 1:
            with ProcessPoolExecutor(min(args.processes, len(FIGURES))) as pool:
                drawn = list(pool.map(draw_each, FIGURES))
        else:
            drawn = [draw_each(name) for name in FIGURES]
        paths = [path for figure_paths in drawn for path in figure_paths]
    for path in paths:
        log(f"wrote {path}")


def _device_facts(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    # facts only: any GPU will do, none is claimed
    _runner(args, log, exclusive=False).device_facts(args.out, args.ceilings)
    log(args.out.read_text())


def _devices(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .device.facts import write_devices

    for path in write_devices(args.jobs, args.out_dir):
        log(f"wrote {path}")


def _device_table(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from .device.facts import facts_rows
    from .report.tables import write_html_table

    rows = facts_rows(read_json(args.device))
    facts = pd.DataFrame(rows, columns=["fact", "value"])
    facts.to_csv(args.out, index=False)
    write_html_table(facts, args.out.with_suffix(".html"), "Device facts",
                     "The device the numbers come from, and the tools that took them.")  # fmt: skip
    log(f"wrote {args.out} and its page: {len(rows)} facts")


def _summary(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .report.summary_files import write_summary

    log(write_summary(args.table, args.kernels_dir, args.findings, args.questions,
                      (args.csv, args.rungs, args.md)))  # fmt: skip


def _ceilings(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    _runner(args, log, exclusive=True).ceilings(args.out, log)


def _compare(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .report.compare import run

    for path in run(args.a, args.b, args.out):
        log(f"wrote {path}")


def _capture(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .capture.folder import save_capture
    from .files import read_config
    from .study.config import load_study

    config = read_config(args.configfile)
    study = load_study(config, args.configfile.resolve().parent)
    command = f"snakemake --configfile {args.configfile} --config mode=gpu"
    jobs = [(e, v, study.parts(e, v)) for e, v in study.jobs()]
    folder = save_capture(args.results, Path("."), args.name, jobs, command,
                          study.ncu.recorded())  # fmt: skip
    log(f"saved capture {args.name} in {folder}")


def _check(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from .check.command import check

    check(args.study, args.configfiles, args.config, args.arch)


Subparsers = Any  # argparse's _SubParsersAction, which it does not export


def _stage(sub: Subparsers, name: str, run: Callable, help_text: str,
           aliases: Sequence[str] = ()) -> argparse.ArgumentParser:  # fmt: skip
    p = sub.add_parser(name, help=help_text, aliases=list(aliases))
    p.set_defaults(run=run, stage=name)
    p.add_argument("--log", type=Path, help="append the stage's details here")
    return p


def _mode_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=["auto", "gpu", "replay"], required=True,
                   help="auto: gpu where the job finds a GPU and ncu, else replay")  # fmt: skip
    p.add_argument("--capture", type=Path, help="capture folder (replay)")
    p.add_argument("--ncu", default=NcuSettings.path, help="ncu executable (gpu)")


def _job_arg(p: argparse.ArgumentParser, each: str) -> None:
    p.add_argument("--job", nargs=2, action="append", required=True,
                   metavar=("VARIANT_PLAN", "PART"),
                   help=f"a variant's plan (Study.plan_file) and the part of it a measure job "
                        f"takes; again for {each}")  # fmt: skip


def _compiled_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compiled", type=Path,
                   help="the compile stage's index: its cubins load, not compiled")  # fmt: skip


def _ncu_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sections", nargs="*", default=[])
    p.add_argument("--clock-control", default=NcuSettings.clock_control)
    p.add_argument("--metrics", nargs="*", default=[])


def _gpu_stages(sub: Subparsers) -> None:
    """The commands of the rules that may hold a GPU: each runs on a runner (gpu or replay);
    and the compile stage's, which builds for them."""
    p = _stage(sub, "compile", _compile,
               "compile an experiment's CUDA configurations ahead of its GPU jobs")  # fmt: skip
    _job_arg(p, "each measure job of the experiment")
    p.add_argument("--out", type=Path, required=True, help="the index of the cubins")
    p.add_argument("--cache", type=Path, default=Path(CUBINS), help="the cubins' folder")
    p.add_argument("--arch", help="what to compile for (default: this machine's first GPU)")
    p.add_argument("--workers", type=int, default=1, help="compiling processes")
    _mode_args(p)
    p = _stage(sub, "measure", _measure,
               "compile, check and time the configurations of measure jobs")  # fmt: skip
    _job_arg(p, "each job of the batch")
    p.add_argument("--out", type=Path, required=True,
                   help="each job's plan, records, device: OUT/<variant>/<part>/")  # fmt: skip
    p.add_argument("--journal", type=Path, required=True,
                   help="every record as it is made, kept for a run that resumes")  # fmt: skip
    _compiled_arg(p)
    _mode_args(p)
    p = _stage(sub, "profile", _profile,
               "profile the configurations of measure jobs, a chunk per ncu process")  # fmt: skip
    p.add_argument("--plans", type=Path, nargs="+", required=True,
                   help="each measure job's plan.json (<variant>/<part>/plan.json)")  # fmt: skip
    p.add_argument("--measures", type=Path, nargs="+", required=True,
                   help="each one's measure.json, in the same order")  # fmt: skip
    p.add_argument("--out", type=Path, required=True,
                   help="each job's files go to OUT/<variant>/<part>/")  # fmt: skip
    p.add_argument("--chunks", type=Path, required=True,
                   help="each ncu process's report, kept here as it completes")  # fmt: skip
    p.add_argument("--chunk-size", type=int, default=NcuSettings.chunk_size,
                   help="configurations per ncu process")  # fmt: skip
    p.add_argument("--explain", choices=("best", "all", "none"), default=NcuSettings.explain,
                   help="the configurations the explain tier profiles")  # fmt: skip
    p.add_argument("--explain-sections", nargs="*", default=list(NcuSettings.explain_sections))
    p.add_argument("--source", choices=("shortest", "longest", "best", "all", "none"),
                   default=NcuSettings.source,
                   help="the configurations the source tier profiles")  # fmt: skip
    p.add_argument("--source-sections", nargs="*", default=list(NcuSettings.source_sections))
    p.add_argument("--threads", type=int, default=NcuSettings.processes,
                   help="the job's cores: with 2, a chunk's ncu process starts while the one "
                   "before profiles")  # fmt: skip
    _compiled_arg(p)
    _ncu_args(p)
    _mode_args(p)
    p = _stage(sub, "device-facts", _device_facts, "write device.json (rule device_facts)",
               aliases=["device"])  # fmt: skip
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--ceilings", type=Path, help="ceilings.json measured on this device (gpu)")
    _mode_args(p)
    p = _stage(sub, "ceilings", _ceilings, "measure the device's bandwidth and FLOP ceilings")
    p.add_argument("--out", type=Path, required=True)
    _mode_args(p)


def _table_stages(sub: Subparsers) -> None:
    """The commands of the rules that read and write tables and figures, on any machine."""
    p = _stage(sub, "collect", _collect, "one table of an experiment's configurations")
    p.add_argument("--experiment", required=True)
    p.add_argument(
        "--job", nargs=3, action="append", required=True, metavar=("PLAN", "MEASURE", "METRICS")
    )
    p.add_argument("--device", type=Path, required=True, help="device.json")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--capture", type=Path, help="the capture a replay came from, to compare")
    _ncu_args(p)  # this config's, compared with the capture's in a replay
    p = _stage(sub, "plot", _plot, "the experiment's figures (PNG and SVG)")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--device", type=Path, required=True)
    p.add_argument("--kernels-dir", type=Path, required=True)
    p.add_argument("--figure", help="one of the family's own figures (default: the standard ones)")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--processes", type=int, default=1, help="draw the standard figures in so many")
    p.add_argument("--separate-sizes", action="store_true",
                   help="the sizes are separate problems (layers): never joined")  # fmt: skip
    p = _stage(sub, "devices", _devices, "results/devices/: one file per device the jobs ran on")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("jobs", type=Path, nargs="+", help="each measure job's device.json")
    p = _stage(sub, "device-table", _device_table, "the device's facts as a CSV table (report)")
    p.add_argument("--device", type=Path, required=True, help="device.json")
    p.add_argument("--out", type=Path, required=True)
    p = _stage(sub, "summary", _summary, "the best configuration per variant and size (CSV, MD)")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--kernels-dir", type=Path, required=True)
    p.add_argument("--csv", type=Path, required=True)
    p.add_argument("--md", type=Path, required=True)
    p.add_argument("--findings", type=Path, required=True, help="the experiment's findings")
    p.add_argument("--rungs", type=Path, required=True, help="what changed between rungs (CSV)")
    p.add_argument("--questions", type=Path, help="the experiment's questions (JSON)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ncuflow", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"ncuflow {VERSION}")
    sub = parser.add_subparsers(dest="stage", required=True)
    _gpu_stages(sub)
    _table_stages(sub)
    p = _stage(sub, "compare", _compare, "two runs or captures, configuration by configuration")
    p.add_argument("a", type=Path, help="results folder or capture: the baseline (A)")
    p.add_argument("b", type=Path, help="results folder or capture: the one compared (B)")
    p.add_argument("--out", type=Path, default=Path("results/compare"))
    p = _stage(sub, "check", _check, "check a study's kernels on a machine without a GPU: "
               "each variant ok, not checked (not a failure) or WRONG (exit status 1)")  # fmt: skip
    p.add_argument("study", type=Path, nargs="?", metavar="CONFIGFILE",
                   help="the study (default: config.yaml); or --configfile")  # fmt: skip
    p.add_argument("--configfile", "--configfiles", dest="configfiles", type=Path, nargs="+",
                   default=[], help="as Snakemake's: config files, each merged over the ones "
                   "before")  # fmt: skip
    p.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE",
                   help="as Snakemake's: values over the config files' (it takes every word "
                   "after it: give a config file before it)")  # fmt: skip
    p.add_argument("--arch", default="sm_90", help="what NVRTC compiles for (default: the H100's)")
    p = _stage(sub, "capture", _capture, "save a GPU run's records as a replay capture")
    p.add_argument("name", help="folder name under resources/captures/")
    p.add_argument("--configfile", type=Path, default=Path("config.yaml"))
    p.add_argument("--results", type=Path, default=Path("results"))
    return parser


def _flat(args: Iterable[object]) -> list[str]:
    out: list[str] = []
    for arg in args:
        out += _flat(arg) if isinstance(arg, list | tuple) else [str(arg)]
    return out


# Python starts with Ctrl-C ignored and ncuflow.__main__ catches it first thing: a Ctrl-C
# while the interpreter is still importing would otherwise print a KeyboardInterrupt
# traceback (an ignored signal stays ignored across exec; a handled one does not).
STARTS_DEAF = "trap '' INT; exec "


def command_line(name: str, *args: object) -> str:
    """A stage's command line for a Snakemake rule's shell: every word quoted
    (shlex.quote), so that a value from a config is one argument whatever it holds, never
    shell syntax. Lists among ``args`` are spread."""
    python = local_path(sys.executable)  # ./ keeps a relative one from PATH's search
    words = [str(python) if python.is_absolute() else f"./{python}", "-m", "ncuflow", name,
             *_flat(args)]  # fmt: skip
    return STARTS_DEAF + " ".join(shlex.quote(word) for word in words)


def copy_command(folder: str, outputs: Iterable[str]) -> str:
    """The shell command that gives a measure job its files from its batch's ``folder``
    (each output's name, copied from there), every word quoted."""
    return " && ".join(shlex.join(["cp", f"{folder}/{Path(out).name}", out]) for out in outputs)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = _logger(args.log)
    # what is said on stderr anyway goes to the log file too, but never twice to a terminal
    also_logged = log if args.log is not None else lambda line: None
    started, ok = time.perf_counter(), False
    try:
        hold_for_run()  # while this stage lives, a new run leaves the folder's lock alone
        stop_on_signals()  # Ctrl-C, or Snakemake cancelling the job: no child outlives it
        args.run(args, log)
        ok = True
    except Interrupted as exc:  # one line: what is kept, what to type
        line = (f"ncuflow: {args.stage} stopped by {exc}; what it measured and profiled is "
                "kept: run the same snakemake command again to go on")  # fmt: skip
        also_logged(line)
        print(line, file=sys.stderr)
        return 130
    except NcuflowError as exc:  # one line, in the log too
        also_logged(f"ncuflow: {exc}")
        print(f"ncuflow: {exc}", file=sys.stderr)
        return 1
    except Exception:  # a bug: its traceback, in the log too
        also_logged(traceback.format_exc())
        raise
    finally:
        # a signal that comes as the stage ends finds its work done: nothing more to say
        with contextlib.suppress(Interrupted):
            record_stage(args.stage, time.perf_counter() - started, ok)
    return 0
