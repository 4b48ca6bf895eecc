"""``ncuflow.run``: a study run from Python (a notebook, a script) through Snakemake's own
API, as ``snakemake --cores N`` runs it from the shell, and its table returned.

Snakemake runs in a child process (``python -m ncuflow.api``): the workflow sets
environment variables, a run lock and Snakemake's own state for the length of a run, none
of which should outlive it in the caller (a notebook's kernel runs many). Interrupting the
caller interrupts the run as Ctrl-C does in a shell, and so does the caller's death; the
same call then goes on where it stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .children import die_with_parent
from .errors import NcuflowError
from .files import atomic_write, read_config

SNAKEFILE = Path(__file__).resolve().parents[2] / "Snakefile"
GIVEN = Path(".snakemake") / "ncuflow" / "given-config.yaml"  # a config given as a mapping


def run(
    config: str | Path | Mapping[str, Any] | None = None,
    *,
    cores: int = 1,
    mode: str | None = None,
    gpus: int = 1,
    workdir: str | Path = ".",
    targets: Sequence[str] = (),
    quiet: bool = True,
) -> pd.DataFrame:
    """Run a study and return its table: one row per configuration of each of its
    experiments (ncuflow.load).

    ``config``: a config file, a config as a mapping (relative paths in it are relative to
    the current folder), or None for the workflow's own config.yaml (the default study).
    ``cores`` and ``gpus``: what the run may use (``snakemake --cores N --resources
    gpu=G``). ``mode``: gpu, replay, auto or check, instead of the config's (check measures
    nothing: it prints a line per variant, raises where one is wrong, and returns an empty
    table). ``workdir``: where
    results/ goes. ``targets``: files or rules to make, instead of everything. ``quiet``:
    Snakemake's progress only, as the workflow's default profile shows it.
    """
    workdir = Path(workdir).resolve()
    configfiles = [] if config is None else [str(_config_file(config, workdir))]
    spec = {"configfiles": configfiles, "overrides": {"mode": mode} if mode else {},
            "cores": cores, "gpus": gpus, "workdir": str(workdir), "targets": list(targets),
            "quiet": quiet}  # fmt: skip
    package = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [package, os.environ.get("PYTHONPATH")]))}  # fmt: skip
    child = subprocess.Popen([sys.executable, "-m", "ncuflow.api", json.dumps(spec)], env=env,
                             preexec_fn=lambda: die_with_parent(signal.SIGINT))  # fmt: skip
    try:
        status = child.wait()
    except KeyboardInterrupt:  # as Ctrl-C in a shell: the run stops, what it made is kept
        child.send_signal(signal.SIGINT)
        child.wait()
        raise
    if status != 0:
        raise NcuflowError(
            f"the study stopped (exit status {status}): its error is above, and every "
            f"job's log under {workdir / 'results'}; the same call goes on where it stopped"
        )
    from .report.results import load

    study = Path(configfiles[0]) if configfiles else SNAKEFILE.with_name("config.yaml")
    if (mode or read_config(study).get("mode")) == "check":
        return pd.DataFrame()  # nothing was measured; results/ may hold an earlier run's
    names = _experiments(study)
    table = load(workdir / "results")
    return table[table["experiment"].isin(names)].reset_index(drop=True)


def _config_file(config: str | Path | Mapping[str, Any], workdir: Path) -> Path:
    """The config as a file: the one given, or the mapping written under ``workdir`` with
    its kernels_dir made absolute."""
    if not isinstance(config, Mapping):
        path = Path(config).resolve()
        if not path.is_file():
            raise NcuflowError(f"{config}: no such config file")
        return path
    given = dict(config)
    if given.get("kernels_dir"):
        given["kernels_dir"] = str(Path(given["kernels_dir"]).resolve())
    path = workdir / GIVEN
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, yaml.safe_dump(given, sort_keys=False))
    return path


def _experiments(path: Path) -> list[str]:
    return list((read_config(path).get("experiments") or {}).keys())


def _snakemake(configfiles: list[str], overrides: dict[str, Any], cores: int, gpus: int,
               workdir: str, targets: list[str], quiet: bool) -> None:  # fmt: skip
    """The run, in the child process: the settings the workflow's default profile gives
    the command line (a gpu slot, jobs a kill left incomplete run again, quiet host)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    output = OutputSettings(quiet={Quietness.HOST} if quiet else None)
    try:
        with SnakemakeApi(output) as api:
            workflow = api.workflow(
                resource_settings=ResourceSettings(cores=cores, resources={"gpu": gpus}),
                config_settings=ConfigSettings(
                    configfiles=[Path(p) for p in configfiles], config=overrides
                ),
                snakefile=SNAKEFILE,
                workdir=Path(workdir),
            )
            dag = workflow.dag(DAGSettings(targets=set(targets), force_incomplete=True))
            dag.execute_workflow()
    except Exception as exc:  # Snakemake has printed what failed; one line more
        print(f"ncuflow.run: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":  # run() starts it: python -m ncuflow.api SETTINGS_JSON
    _snakemake(**json.loads(sys.argv[1]))
