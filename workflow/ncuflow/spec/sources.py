"""Kernel sources: what a CUDA variant file includes, its declaration (YAML front matter
in a ``/*--- ... ---*/`` comment), its overridable ``#define`` defaults, the file it is
declared like, and the fingerprint of every file that decides a family's measurements."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, SpecError
from ..files import duplicate_keys, load_yaml, read_text

_FRONT_MATTER = re.compile(r"/\*---\s*\n(.*?)\n---\*/", re.DOTALL)
_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def read_yaml(path: Path, text: str) -> dict[str, Any]:
    """The mapping a YAML text (a file, or a variant's front matter) holds, strictly."""
    try:
        duplicate_keys(text, str(path))
    except ConfigError as exc:
        where = "" if exc.path == "(top level)" else f"{path}: {exc.path}: "
        hint = ("; a value that holds ': ' (an idea:, say) must be quoted"
                if "mapping values are not allowed" in exc.problem else "")  # fmt: skip
        raise SpecError(f"{where}{exc.problem}{hint}") from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of keys, got {type(data).__name__}")
    return data


def local_includes(path: Path) -> list[Path]:
    """Files a CUDA source includes with ``#include "..."``, transitively, resolved
    against the including file's folder (what the harness adds to the include path)."""
    found: list[Path] = []
    pending = [path]
    while pending:
        current = pending.pop()
        if current.suffix == ".yaml" or not current.is_file():  # any file a source includes
            continue
        for name in _LOCAL_INCLUDE.findall(read_text(current)):
            target = (current.parent / name).resolve()
            if target.is_file() and target not in found:
                found.append(target)
                pending.append(target)
    return found


_ANY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">]', re.MULTILINE)


def _inside(path: Path, root: Path, where: str) -> None:
    real = path.resolve()  # links followed
    if not real.is_relative_to(root):
        via = f" (a link to {real})" if real != path.absolute() else ""
        raise SpecError(f"{where}: {path}{via} is outside the kernels folder {root}; kernel "
                        "sources are read only from inside it: copy the file in")  # fmt: skip


def check_confined(path: Path, root: Path) -> None:
    """``path`` (a variant file, or the one it is like) and every file it includes lie
    inside ``root`` (kernels_dir), links followed; an include by absolute path, or by ``<>``
    with ``..``, is refused too, and so is a quoted include that names no file beside the
    one that includes it. Each refusal names the file and the line."""
    root = root.resolve()
    _inside(path, root, str(path))
    pending, seen = [path], set()
    while pending:
        current = pending.pop()
        if current in seen or current.suffix == ".yaml":
            continue
        seen.add(current)
        text = read_text(current)
        for match in _ANY_INCLUDE.finditer(text):
            where = f"{current}:{text.count(chr(10), 0, match.start()) + 1}"
            kind, name = match.groups()
            if Path(name).is_absolute() or (kind == "<" and ".." in Path(name).parts):
                raise SpecError(f"{where}: #include {kind}{name}{'>' if kind == '<' else kind} "
                                "reaches outside the kernels folder; include files inside it "
                                "by a relative path")  # fmt: skip
            target = current.parent / name
            if kind == '"':  # a file of the kernels folder, beside the file that includes it
                if not target.is_file():
                    raise SpecError(
                        f'{where}: #include "{name}" names no file ({target} is missing); a '
                        "quoted include is a file of the kernels folder, relative to the file "
                        "that includes it: copy it in (the bundled families' shared headers "
                        "are kernels/common/), or include a toolkit header with <...>"
                    )
                _inside(target, root, where)
                pending.append(target.resolve())


def check_define(path: Path, source: str, name: str, default: int, inherited: str) -> None:
    """The .cu file must carry the tunable as an overridable #define with the same default.
    A variant like another whose file it includes may leave it to that file (or to what
    that file includes: ``inherited``, their text), whatever the default there: ncuflow
    always sets every tunable with -D."""
    guarded = re.search(rf"#ifndef\s+{name}\s*\n\s*#define\s+{name}\s+(\S+)", source)
    if guarded is None and re.search(rf"#ifndef\s+{name}\s*\n\s*#define\s+{name}\s", inherited):
        return
    if guarded is None:
        raise SpecError(
            f"{path}: parameter {name} needs '#ifndef {name}' / '#define {name} {default}' "
            "so that ncuflow can set it with -D"
        )
    if guarded.group(1) != str(default):
        raise SpecError(
            f"{path}: #define {name} {guarded.group(1)} differs from the declared default "
            f"{name}: {default}"
        )


def declaration(path: Path) -> tuple[str, dict[str, Any]]:
    """A variant file's source ('' for a .yaml library variant) and its declaration."""
    if path.suffix != ".cu":
        return "", read_yaml(path, read_text(path))
    source = read_text(path)
    match = _FRONT_MATTER.search(source)
    if match is None:
        raise SpecError(f"{path}: no declaration; add a /*--- ... ---*/ YAML comment")
    # blank lines before the block: YAML's messages then give the file's line numbers
    above = "\n" * source.count("\n", 0, match.start(1))
    return source, read_yaml(path, above + match.group(1))


def like_merged(path: Path, data: dict[str, Any], root: Path) -> tuple[dict[str, Any], list[Path]]:
    """A declaration with ``like: <file>`` (another variant's .cu, relative to this one)
    takes that variant's tunables, in its order, its own defaults winning and its new ones
    after, and that variant's restrictions before its own: a variant that compiles another's
    code needs its conditions without a copy of them. Also the files it was built from. The
    file it is like must lie inside ``root`` (kernels_dir)."""
    like = data.get("like")
    if like is None:
        return data, []
    base_path = (path.parent / str(like)).resolve()
    if base_path.suffix != ".cu" or not base_path.is_file() or base_path == path.resolve():
        raise SpecError(f"{path}: like {like!r} must name another variant's .cu file, "
                        "relative to this one")  # fmt: skip
    check_confined(path.parent / str(like), root)  # before it is read
    _, base = declaration(base_path)
    if "like" in base:
        raise SpecError(f"{path}: like {like!r} names a variant that is itself like another "
                        f"({base['like']}); name that one")  # fmt: skip
    merged = dict(data)
    for key, kind in (("params", dict), ("restrictions", list)):
        for where, value in ((path, data.get(key)), (base_path, base.get(key))):
            if value is not None and not isinstance(value, kind):
                raise SpecError(f"{where}: {key} must be a {'mapping' if kind is dict else 'list'}")
    own, inherited = data.get("params") or {}, base.get("params") or {}
    merged["params"] = {**{k: own.get(k, v) for k, v in inherited.items()}, **own}
    merged["restrictions"] = [*(base.get("restrictions") or []), *(data.get("restrictions") or [])]
    return merged, [base_path]


def fingerprint(folder: Path, variant_files: Iterable[Path]) -> str:
    """Hash of everything that decides a family's measurements: the files of its folder and
    every file its variants include, or are declared like, from elsewhere."""
    digest = hashlib.sha256()
    files = [p for p in sorted(folder.iterdir()) if p.suffix in {".yaml", ".py", ".cu", ".cuh"}]
    for path in variant_files:
        like = like_merged(path, declaration(path)[1], folder.parent)[1]
        files += [p for p in (*local_includes(path), *like) if p not in files]
    for path in dict.fromkeys(files):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
