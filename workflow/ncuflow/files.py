"""Files every stage writes and reads: writes that no reader sees half-done, lines
appended and flushed as they happen, JSON read with a message that names the file, and
strict YAML (a key written twice is an error, never silently the last one)."""

from __future__ import annotations

import codecs
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, NcuflowError, key_path, shown
from .vocab import USER_CACHE_ENV

# The byte order marks an editor may begin a file with when it saves it as UTF-16 or
# UTF-32 (UTF-32's little-endian one starts as UTF-16's does: it is looked for first).
BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))  # fmt: skip


def read_text(path: Path) -> str:
    """A text file the user wrote (a config, family.yaml, a kernel): UTF-8, or one message
    that names the file, the line and the byte (or the encoding its byte order mark names)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise NcuflowError(f"{path}: no such file") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        encoding = next((name for mark, name in BYTE_ORDER_MARKS if data.startswith(mark)), "")
        if encoding:
            raise NcuflowError(f"{path}: line 1: the file is {encoding} (it starts with a "
                               f"{encoding} byte order mark); save the file as UTF-8"
                               ) from None  # fmt: skip
        line = data[: exc.start].count(b"\n") + 1
        raise NcuflowError(f"{path}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8; "
                           "save the file as UTF-8 (it was saved as Latin-1 or another "
                           "encoding)") from None  # fmt: skip


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
# The deepest a YAML text or a config may nest mappings and lists (a study needs 7, the
# config's schema 14): the pure-Python YAML parser and the walks of a config recurse once a
# level, and would end in a RecursionError at about a thousand.
MAX_DEPTH = 32
TOO_DEEP = f"mappings and lists nested deeper than {MAX_DEPTH} levels"
DEPTH_EXPECTED = f"expected at most {MAX_DEPTH} (a study needs 7)"


class YamlError(yaml.YAMLError):
    """A YAML text that cannot be read, in one line: what is wrong, its line and column,
    the line itself and what is expected (PyYAML's own message takes several lines)."""


class _PythonLoader(yaml.SafeLoader):
    """PyYAML's pure-Python loader, which refuses a text nested deeper than MAX_DEPTH as it
    composes it: its composer recurses once a level."""

    depth = 0

    def compose_sequence_node(self, anchor: Any) -> Any:
        return self._deeper(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor: Any) -> Any:
        return self._deeper(super().compose_mapping_node, anchor)

    def _deeper(self, compose: Callable[[Any], Any], anchor: Any) -> Any:
        if self.depth == MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(problem=TOO_DEEP, problem_mark=mark,
                                              note=DEPTH_EXPECTED)  # fmt: skip
        self.depth += 1
        try:
            return compose(anchor)
        finally:
            self.depth -= 1


# libyaml's parser where PyYAML was built with it: the same nodes and values, several times
# faster (a study reads a YAML text per variant and family, in every process that loads
# them). A text it refuses is read again by the pure-Python parser, whose message is the one
# shown (and the one that decides).
FAST_LOADER = getattr(yaml, "CSafeLoader", _PythonLoader)
# What to do about what YAML's parser found, where its message names only that.
HINTS = {
    "found character '\\t' that cannot start any token": "indent with spaces: YAML allows "
    "no tab there",
    "found undefined alias": "an alias (*name) repeats an anchor (&name) written before it "
    "in the file: write the anchor first, or quote a text that starts with *",
}


def _one_line(exc: yaml.YAMLError, text: str) -> str:
    """PyYAML's error in one line: what it found (while doing what, from where), at which
    line and column, that line as written, and what to do where that is known."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return " ".join(str(exc).split())
    found = exc.problem or ""
    if exc.context:
        at = exc.context_mark
        since = f" (line {at.line + 1}, column {at.column + 1})" if at and (
            exc.problem_mark is None or at.line != exc.problem_mark.line) else ""  # fmt: skip
        found = f"{exc.context}{since}, {found}"
    mark = exc.problem_mark or exc.context_mark
    if mark is not None:
        lines = text.splitlines()
        written = lines[mark.line].strip(" ") if mark.line < len(lines) else ""
        found += f" at line {mark.line + 1}, column {mark.column + 1}"
        found += f": {shown(written)}" if written else ""
    hint = exc.note or next((h for start, h in HINTS.items() if start in found), "")
    return f"{found}; {hint}" if hint else found


def too_deep(root: Any, children: Callable[[Any], list[tuple[Any, Any]] | None]
             ) -> tuple[list[Any], Any, bool] | None:  # fmt: skip
    """Where ``root`` nests mappings and lists deeper than MAX_DEPTH, or holds itself (an
    alias inside its own anchor's value): the steps to that mapping or list, it, and whether
    it holds itself; None where neither. ``children`` gives a mapping's or list's (step,
    child) pairs, None for anything else. Each is walked once, however many aliases name it."""
    height: dict[int, int] = {}  # levels of mappings and lists from each one walked down
    holding: set[int] = set()  # those whose walk is under way: the path to the current one
    # (item, its level, the steps to it as (step, the steps before), its children once walked)
    pending: list[tuple[Any, int, Any, Any]] = [(root, 1, None, None)]
    while pending:
        item, level, trail, walked = pending.pop()
        if walked is not None:  # its children are done
            holding.discard(id(item))
            height[id(item)] = 1 + max((height.get(id(c), 0) for _, c in walked), default=0)
            continue
        below = children(item)
        if below is None:
            continue
        if id(item) in holding or level - 1 + height.get(id(item), 1) > MAX_DEPTH:
            steps = []
            while trail:
                step, trail = trail
                steps.insert(0, step)
            return steps, item, id(item) in holding
        if id(item) not in height:
            holding.add(id(item))
            pending.append((item, level, trail, below))
            pending += [(child, level + 1, (step, trail), None) for step, child in below]
    return None


def _node_children(node: Any) -> list[tuple[Any, Any]] | None:
    """A YAML node's keys and values (a mapping), or items (a list), with their places."""
    if isinstance(node, yaml.MappingNode):
        return [(i, child) for i, pair in enumerate(node.value) for child in pair]
    return list(enumerate(node.value)) if isinstance(node, yaml.SequenceNode) else None


def compose_yaml(text: str) -> Any:
    """The node tree of a YAML text, or YamlError (one line) where it is not valid YAML or
    nests deeper than MAX_DEPTH (aliases followed)."""
    try:
        try:
            root = yaml.compose(text, Loader=FAST_LOADER)
        except yaml.YAMLError:  # the pure-Python parser's message is the one shown
            root = yaml.compose(text, Loader=_PythonLoader)
        deep = too_deep(root, _node_children)
        if deep:
            problem, note = (("an alias inside its own anchor's value (&a [*a]) nests it "
                              "without end", "expected an alias after its anchor's value")
                             if deep[2] else (TOO_DEEP, DEPTH_EXPECTED))  # fmt: skip
            raise yaml.composer.ComposerError(problem=problem, note=note,
                                              problem_mark=deep[1].start_mark)  # fmt: skip
    except yaml.YAMLError as exc:
        raise YamlError(_one_line(exc, text)) from None
    return root


def load_yaml(text: str) -> Any:
    """The values of a YAML text, with YAML's safe tags only: YamlError (one line) otherwise,
    or where the text is not valid YAML (compose_yaml)."""
    root = compose_yaml(text)
    try:
        return None if root is None else yaml.constructor.SafeConstructor().construct_document(root)
    except yaml.YAMLError as exc:  # a tag YAML's safe loader does not take
        raise YamlError(_one_line(exc, text)) from None


def duplicate_keys(text: str, source: str) -> None:
    """Refuse a YAML text that writes a key twice in one mapping (YAML keeps only the last,
    silently), a key YAML reads as something other than a string (``yes``, ``~``, ``1``),
    or aliases that expand it beyond MAX_EXPANDED values: the error names the key's path
    and its lines. Each node is checked once, however many aliases name it."""
    try:
        root = compose_yaml(text)
    except YamlError as exc:
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
        pending += [child for _, child in _node_children(node) or ()]
    for node in reversed(order):  # children first
        counts[id(node)] = 1 + sum(counts[id(c)] for _, c in _node_children(node) or ())
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
    """A config file, refused with one message (its line where it has one) if it is not
    UTF-8 or not valid YAML (a tab in its indentation, an alias without its anchor), if it
    nests deeper than MAX_DEPTH, writes a key twice or a key that is not a name, stands for
    too many values through aliases, or holds a YAML tag other than the plain ones."""
    text = read_text(path)
    duplicate_keys(text, str(path))
    try:
        data = load_yaml(text)
    except YamlError as exc:  # a tag ncuflow never reads (!!python/name:...)
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
