"""``ncuflow check``'s study, read as Snakemake reads a run's: the config file given bare
(``ncuflow check study.yaml``) or with ``--configfile`` (several are merged, each over the
ones before), then ``--config key=value`` overrides parsed and merged by Snakemake's own
functions and read as the schema wants (study.checks.coerce_overrides, as the Snakefile
does). Relative paths in them are relative to the last config file's folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import NcuflowError
from ..files import read_config
from ..study.checks import coerce_overrides
from ..study.config import Study, load_study
from .variants import TARGET, print_check

DEFAULT = Path("config.yaml")


def read_study(paths: Sequence[Path], overrides: Sequence[str] = ()) -> Study:
    """The study of the config files ``paths``, with the ``--config`` ``overrides``."""
    from snakemake.utils import update_config

    config: dict[str, Any] = {}
    for path in paths:
        if not path.is_file():
            raise NcuflowError(f"check: {path}: no such config file")
        update_config(config, read_config(path))
    if overrides:
        from snakemake.cli import parse_config  # a second to import: only where it is used

        try:
            given = parse_config(list(overrides))
        except ValueError as exc:
            raise NcuflowError(f"check: --config {' '.join(overrides)}: {exc}") from None
        update_config(config, given)
        coerce_overrides(config, given)
    return load_study(config, paths[-1].resolve().parent)


def check(
    bare: Path | None, configfiles: Sequence[Path], overrides: Sequence[str], arch: str = TARGET
) -> None:
    """Check the study's variants, one line each and the counts; an error where one is
    wrong (exit status 1). Variants not checked here are no error."""
    if bare is not None and configfiles:
        raise NcuflowError(f"check: the config file is given twice ({bare} and --configfile); "
                           "give it one way: ncuflow check study.yaml or ncuflow check "
                           "--configfile study.yaml")  # fmt: skip
    paths = list(configfiles) or [bare or DEFAULT]
    wrong = print_check(read_study(paths, overrides), arch)
    if wrong:
        shown = ", ".join(map(str, paths))
        raise NcuflowError(f"check: {wrong} variant(s) of {shown} are wrong (above)")
