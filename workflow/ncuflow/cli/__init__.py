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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..children import Interrupted, stop_on_signals
from ..errors import NcuflowError
from ..files import atomic_write, local_path
from ..ncu import NcuSettings
from ..plan import Job, Plan
from ..report.gate import FAIL_ON, GATE_FAILED
from ..runlock import hold_for_run
from ..runlog import record_stage
from ..vocab import COMPILED_ENV, CUBINS, MEASURE, METRICS, MIN_EFFECT, NCU_LONG, PLAN, VERSION
from .args import Subparsers, mode_args, ncu_args, stage_parser
from .tables import table_stages

if TYPE_CHECKING:
    from ..runners import Runner


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
    from ..runners import open_runner

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
    from ..spec import load_variant

    plan = Plan.load(plan_path)
    variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)[1]
    return plan, variant.runs_on == "gpu"


def _compile(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..compile.stage import compile_stage, gpu_arch

    if args.mode == "replay":  # nothing runs, nothing to build
        log("replay: nothing to compile")
        atomic_write(args.out, '{"arch": null, "cubins": {}}')
        return
    jobs = [(Path(plan), part) for plan, part in args.job]
    compile_stage(jobs, args.out, args.cache, args.arch or gpu_arch(), args.workers, log,
                  args.proposals)  # fmt: skip


def _compiled(args: argparse.Namespace) -> None:
    """The compile stage's index, for this stage's workers (compile.cubins)."""
    if args.compiled is not None:
        os.environ[COMPILED_ENV] = str(args.compiled.resolve())


def _measure(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..study.config import part_plan

    _compiled(args)

    jobs = []
    for variant_plan, part in args.job:  # each job's part of its variant's plan, expanded here
        plan = part_plan(Path(variant_plan), part, args.proposals)
        folder = args.out / plan.variant / part
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / PLAN, plan.to_json())
        jobs.append(Job(folder / PLAN, folder / MEASURE, folder, part))
    on_gpu = any(_job(job.plan_path)[1] for job in jobs)
    _runner(args, log, exclusive=on_gpu).measure(jobs, args.journal, log)


def _profile(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    import pandas as pd

    from ..analyze.derive import config_metrics
    from ..profile.members import Member, choose

    if len(args.plans) != len(args.measures):
        raise NcuflowError("profile: give as many --measures as --plans, in the same order")
    members = []
    for plan, measure in zip(args.plans, args.measures, strict=True):
        # results/<experiment>/<variant>/<part>/plan.json; a plan elsewhere is a whole variant
        part = plan.parent.name if re.fullmatch(r"p[0-9]+", plan.parent.name) else "p0"
        job = Plan.load(plan)
        members.append(Member(plan, measure, args.out / job.variant / part, part))
    members = choose(members, args.profile)
    on_gpu = any(_job(plan)[1] for plan in args.plans)
    _compiled(args)
    _runner(args, log, exclusive=on_gpu).profile(members, args.chunks, log)
    for member in members:
        metrics = config_metrics(pd.read_parquet(member.out / NCU_LONG))
        metrics.to_parquet(member.out / METRICS, index=False)
    log(f"the registry's columns of {len(members)} jobs' configurations written")


def _device_facts(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    # facts only: any GPU will do, none is claimed
    _runner(args, log, exclusive=False).device_facts(args.out, args.ceilings,
                                                     args.energy_ceilings)  # fmt: skip
    log(args.out.read_text())


def _ceilings(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    _runner(args, log, exclusive=True).ceilings(args.out, log)


def _energy_ceilings(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    _runner(args, log, exclusive=True).energy_ceilings(args.out, log, args.seconds)


def _compare(args: argparse.Namespace, log: Callable[[str], None]) -> int:
    from ..report.compare import run

    if not 0 < args.threshold < 100:
        raise NcuflowError(f"compare --threshold: {args.threshold:g} is not a percentage "
                           "between 0 and 100 (the least change in time called one)")  # fmt: skip
    paths, failing = run(args.a, args.b, args.out, args.threshold / 100, tuple(args.fail_on))
    for path in paths:
        log(f"wrote {path}")
    if failing:
        told = ", ".join(f"{n} {cause}" for cause, n in failing.items())
        log(f"the gate fails (--fail-on {' '.join(args.fail_on)}): {told}; {paths[2]} says which")
        return GATE_FAILED
    return 0


def _capture(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..capture.folder import save_capture
    from ..files import read_config
    from ..study.config import load_study

    config = read_config(args.configfile)
    study = load_study(config, args.configfile.resolve().parent)
    command = f"snakemake --configfile {args.configfile} --config mode=gpu"
    jobs = [(e, v, study.parts(e, v)) for e, v in study.jobs()]
    folder = save_capture(args.results, Path("."), args.name, jobs, command,
                          study.ncu.recorded())  # fmt: skip
    log(f"saved capture {args.name} in {folder}")


def _check(args: argparse.Namespace, log: Callable[[str], None]) -> None:
    from ..check.command import check

    check(args.study, args.configfiles, args.config, args.arch)


def _job_arg(p: argparse.ArgumentParser, each: str) -> None:
    p.add_argument("--job", nargs=2, action="append", required=True,
                   metavar=("VARIANT_PLAN", "PART"),
                   help=f"a variant's plan (Study.plan_file) and the part of it a measure job "
                        f"takes; again for {each}")  # fmt: skip
    p.add_argument("--proposals", type=Path,
                   help="a search's round file: each part's configurations are those it "
                        "proposed")  # fmt: skip


def _compiled_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compiled", type=Path,
                   help="the compile stage's index: its cubins load, not compiled")  # fmt: skip


def _gpu_stages(sub: Subparsers) -> None:
    """The commands of the rules that may hold a GPU: each runs on a runner (gpu or replay);
    and the compile stage's, which builds for them."""
    p = stage_parser(sub, "compile", _compile,
               "compile an experiment's CUDA configurations ahead of its GPU jobs")  # fmt: skip
    _job_arg(p, "each measure job of the experiment")
    p.add_argument("--out", type=Path, required=True, help="the index of the cubins")
    p.add_argument("--cache", type=Path, default=Path(CUBINS), help="the cubins' folder")
    p.add_argument("--arch", help="what to compile for (default: this machine's first GPU)")
    p.add_argument("--workers", type=int, default=1, help="compiling processes")
    mode_args(p)
    p = stage_parser(sub, "measure", _measure,
               "compile, check and time the configurations of measure jobs")  # fmt: skip
    _job_arg(p, "each job of the batch")
    p.add_argument("--out", type=Path, required=True,
                   help="each job's plan, records, device: OUT/<variant>/<part>/")  # fmt: skip
    p.add_argument("--journal", type=Path, required=True,
                   help="every record as it is made, kept for a run that resumes")  # fmt: skip
    _compiled_arg(p)
    mode_args(p)
    p = stage_parser(sub, "profile", _profile,
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
    p.add_argument("--profile", default="all",
                   help="ncu.profile: all, best or top:K per variant and size")  # fmt: skip
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
    ncu_args(p)
    mode_args(p)
    p = stage_parser(sub, "device-facts", _device_facts, "write device.json (rule device_facts)",
               aliases=["device"])  # fmt: skip
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--ceilings", type=Path, help="ceilings.json measured on this device (gpu)")
    p.add_argument("--energy-ceilings", type=Path, help="energy_ceilings.json, where measured")
    mode_args(p)
    p = stage_parser(sub, "ceilings", _ceilings, "measure the device's bandwidth and FLOP ceilings")
    p.add_argument("--out", type=Path, required=True)
    mode_args(p)
    p = stage_parser(sub, "energy-ceilings", _energy_ceilings,
                     "measure the device's energy ceilings (rule energy_ceilings)")  # fmt: skip
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seconds", type=float, required=True,
                   help="how long each kernel runs back to back (the config's energy)")  # fmt: skip
    mode_args(p)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ncuflow", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"ncuflow {VERSION}")
    sub = parser.add_subparsers(dest="stage", required=True)
    _gpu_stages(sub)
    table_stages(sub)
    p = stage_parser(
        sub, "compare", _compare, "two runs or captures, configuration by configuration"
    )
    p.add_argument("a", type=Path, help="results folder or capture: the baseline (A)")
    p.add_argument("b", type=Path, help="results folder or capture: the one compared (B)")
    p.add_argument("--out", type=Path, default=Path("results/compare"))
    p.add_argument("--fail-on", nargs="+", default=[], choices=FAIL_ON,
                   help=f"exit with status {GATE_FAILED} where B has a configuration SLOWER or "
                   "broken (slower), one the repeats cannot tell (ambiguous), or one A "
                   "measured ok and B did not measure (missing); gate.md says which")  # fmt: skip
    p.add_argument("--threshold", type=float, default=100 * MIN_EFFECT, metavar="PCT",
                   help="the least change in time called one (default %(default)g %%)")  # fmt: skip
    p = stage_parser(sub, "check", _check, "check a study's kernels on a machine without a GPU: "
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
    p = stage_parser(sub, "capture", _capture, "save a GPU run's records as a replay capture")
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
    started, ok, status = time.perf_counter(), False, 0
    try:
        hold_for_run()  # while this stage lives, a new run leaves the folder's lock alone
        stop_on_signals()  # Ctrl-C, or Snakemake cancelling the job: no child outlives it
        status = args.run(args, log) or 0
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
    return status
