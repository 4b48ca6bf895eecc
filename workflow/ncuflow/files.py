"""Files every stage writes and reads: writes that no reader sees half-done, lines
appended and flushed as they happen, JSON read with a message that names the file, and
strict YAML (a key written twice is an error, never silently the last one)."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, NcuflowError, key_path
from .vocab import USER_CACHE_ENV


def read_text(path: Path) -> str:
    """A text file the user wrote (a config, family.yaml, a kernel): UTF-8, or one message
    that names the file, the line and the byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise NcuflowError(f"{path}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8; "
                           "save the file as UTF-8") from None  # fmt: skip


def local_path(path: Path | str) -> Path:
    """``path`` relative to the working folder where it lies inside it, else absolute: what
    plans and command lines hold, so that a project moved or copied with its results keeps
    them and Snakemake reruns nothing."""
    absolute, here = Path(path).absolute(), Path.cwd()
    return absolute.relative_to(here) if absolute.is_relative_to(here) else absolute


def temporary_beside(path: Path) -> Path:
    """A hidden file beside ``path``, this process's and thread's own, to write in full
    before it is renamed over ``path``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def user_cache(name: str) -> Path:
    """The folder ``name`` of this user's ncuflow cache: what may be kept across runs and
    working folders (what the machine's ncu knows, say)."""
    root = os.environ.get(USER_CACHE_ENV)
    if not root:
        try:
            base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
            root = Path(base) / "ncuflow"
        except RuntimeError:  # no home folder (a container's user without one)
            root = Path(tempfile.gettempdir()) / f"ncuflow-cache-{os.getuid()}"
    return Path(root) / name


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write a file (text, or bytes as they are) so that no reader ever sees it
    half-written: a temporary file beside it, flushed to disk, then renamed over it."""
    tmp = temporary_beside(path)
    with open(tmp, "wb" if isinstance(text, bytes) else "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_if_changed(path: Path, text: str) -> Path:
    """Write ``text`` unless the file already holds it: a file whose time changes only
    with its content, for Snakemake to rerun what depends on it."""
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
    return path


def append_line(path: Path, entry: dict[str, Any]) -> None:
    """One JSON line appended and on disk before this returns: what a crash cannot take."""
    with open(path, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


# What to do about a file between stages that was cut short or edited.
RERUN = "delete it and run its stage again"


def read_json(path: Path, what: str = "", fix: str = RERUN) -> Any:
    """A JSON file, or one message that names it and what to do (``fix``: it was cut
    short by a crash, or edited by hand)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise NcuflowError(f"{path}: no such file{f' ({what})' if what else ''}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NcuflowError(f"{path}: not valid JSON ({exc}); it was cut short or edited: "
                           f"{fix}") from None  # fmt: skip


def read_parquet(path: Path, fix: str = RERUN) -> Any:
    """A Parquet table, or one message that names it and what to do."""
    import pandas as pd
    import pyarrow

    try:
        return pd.read_parquet(path)
    except (pyarrow.ArrowException, OSError) as exc:
        raise NcuflowError(f"{path}: not a readable Parquet table ({exc}); it was cut short "
                           f"or edited: {fix}") from None  # fmt: skip


# The files of a run's jobs (Snakemake's outputs, never profile_chunks/, whose markers
# decide what is redone), relative to the working folder.
JOB_FILES = ("results/*.json", "results/*/*.json", "results/*/*.parquet",
             "results/*/*/p*/*.json", "results/*/*/p*/*.parquet")  # fmt: skip


def cut_short(path: Path) -> bool:
    """Whether a JSON or Parquet file ends where no complete one would: JSON not closed by
    its last bracket, Parquet without its closing magic bytes (a crash, a full disk, or a
    copy stopped half-way)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - 64))
        tail = handle.read().rstrip()
    if path.suffix == ".parquet":
        return size < 12 or not tail.endswith(b"PAR1")
    return not tail.endswith((b"}", b"]"))


def remove_cut_short(folder: Path) -> list[Path]:
    """Remove the job files under ``folder`` that were cut short, so that Snakemake makes
    them again in this run; the paths removed."""
    removed = []
    for pattern in JOB_FILES:
        for path in sorted(folder.glob(pattern)):
            if path.is_file() and cut_short(path):
                path.unlink()
                removed.append(path)
    return removed


def write_json(path: Path, data: Any, sort_keys: bool = True) -> None:
    """``data`` as indented JSON with a final newline, written atomically."""
    atomic_write(path, json.dumps(data, indent=1, sort_keys=sort_keys) + "\n")


# The most values a config file may stand for once its aliases (*name) are expanded: a few
# levels of aliases of aliases make billions (every reader of the config walks them all).
MAX_EXPANDED = 1_000_000


# libyaml's parser where PyYAML was built with it: the same nodes and values, several times
# faster (a study reads a YAML text per variant and family, in every process that loads
# them). A text it refuses is read again by the pure-Python parser, whose message is the one
# shown (and the one that decides).
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parsed(read: Any, text: str) -> Any:
    """``read`` (yaml.compose or yaml.load) by the fast loader, and by the pure-Python one
    where the fast one refuses the text (its message is the one shown)."""
    try:
        return read(text, Loader=FAST_LOADER)
    except yaml.YAMLError:
        return read(text, Loader=yaml.SafeLoader)


def compose_yaml(text: str) -> Any:
    """The node tree of a YAML text (yaml.YAMLError where it is not valid YAML)."""
    return _parsed(yaml.compose, text)


def load_yaml(text: str) -> Any:
    """The values of a YAML text, with YAML's safe tags only (yaml.YAMLError otherwise)."""
    return _parsed(yaml.load, text)


def duplicate_keys(text: str, source: str) -> None:
    """Refuse a YAML text that writes a key twice in one mapping (YAML keeps only the last,
    silently), a key YAML reads as something other than a string (``yes``, ``~``, ``1``),
    or aliases that expand it beyond MAX_EXPANDED values: the error names the key's path
    and its lines. Each node is checked once, however many aliases name it."""
    try:
        root = compose_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError("(top level)", f"{source} is not valid YAML: {exc}") from None
    if root is None:
        return
    if _expanded(root) > MAX_EXPANDED:
        raise ConfigError("(top level)", f"{source} stands for more than {MAX_EXPANDED:,} "
                          "values once its aliases (*name) are expanded; write them out or "
                          "use fewer levels of aliases")  # fmt: skip
    pending: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    checked: set[int] = set()
    while pending:
        node, path = pending.pop()
        if id(node) in checked:
            continue
        checked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = key_node.value
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ConfigError(key_path(path), f"a key at line {line} of {source} is a "
                                      "list or mapping; a key must be a name")  # fmt: skip
                if key_node.tag != "tag:yaml.org,2002:str" and key != "<<":
                    read_as = yaml.SafeLoader(key or "~").get_single_data()
                    raise ConfigError(
                        key_path((*path, key)),
                        f"the key {key!r} (line {line} of {source}) is read by YAML as "
                        f"{read_as!r}, not a name; quote it: '{key}'",
                    )
                if key in seen and key != "<<":
                    raise ConfigError(
                        key_path((*path, key)),
                        f"written twice in {source} (lines {seen[key]} and {line}); YAML would "
                        "keep only the last: remove or rename one",
                    )
                seen[key] = line
                pending.append((value_node, (*path, key)))
        elif isinstance(node, yaml.SequenceNode):
            pending += [(item, (*path, i)) for i, item in enumerate(node.value)]


def _expanded(root: Any) -> int:
    """How many values a composed YAML document stands for with every alias expanded
    (each node's count worked out once)."""
    counts: dict[int, int] = {}
    order, pending = [], [root]
    while pending:  # every node once, children after their parents
        node = pending.pop()
        if id(node) in counts:
            continue
        counts[id(node)] = 0
        order.append(node)
        if isinstance(node, yaml.MappingNode):
            pending += [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value
    for node in reversed(order):  # children first
        children = ([c for pair in node.value for c in pair]
                    if isinstance(node, yaml.MappingNode)
                    else node.value if isinstance(node, yaml.SequenceNode) else [])  # fmt: skip
        counts[id(node)] = 1 + sum(counts[id(c)] for c in children)
    return counts[id(root)]


def _only_plain(value: Any, where: list, path: Path) -> None:
    """Refuse what YAML's own tags make of a value (!!set, !!binary, a date or time): a
    config holds mappings, lists, text, numbers, booleans and nulls only."""
    if isinstance(value, dict):
        for key, item in value.items():
            _only_plain(item, [*where, key], path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _only_plain(item, [*where, index], path)
    elif value is not None and not isinstance(value, str | int | float):
        raise ConfigError(
            key_path(where),
            f"{path}: YAML reads this value as a {type(value).__name__} (a tag such as "
            "!!set or !!binary, or a date); expected text, a number, a list or a mapping: "
            "quote it",
        )


def read_config(path: Path) -> dict[str, Any]:
    """A config file, refused with one message if it writes a key twice, a key that is not
    a name, too many values through aliases, or a YAML tag other than the plain ones."""
    text = read_text(path)
    duplicate_keys(text, str(path))
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:  # a tag ncuflow never reads (!!python/name:...)
        raise ConfigError("(top level)", f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("(top level)", f"{path} holds no mapping of keys")
    _only_plain(data, [], path)
    if "__use_yte__" in data:  # Snakemake has run the file's templates before ncuflow reads it
        raise ConfigError(
            "__use_yte__",
            f"{path} asks Snakemake to evaluate it as a YTE template (Python expressions, "
            "already run by Snakemake when this is read); ncuflow takes plain YAML only: "
            "remove the key and write the values themselves",
        )
    return data
