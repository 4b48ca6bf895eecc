"""What a report says besides its metrics: Nsight Compute's rule results (findings) and,
for the explain tier, where the time goes in the source (per-PC stall samples and the
memory instructions' sectors and bank conflicts).

Rule results come from ``ncu_report``'s ``rule_results_as_dicts()``. Their payload differs
between versions: the message may be a dict or the text of one, and the text may also
carry the focus metrics and the speedup estimate; both forms are read the same way.
Kernels are compiled with ``-lineinfo``, so every sampled PC has a file and line: NVRTC
names the variant's own source ``<hash>.cubin.cu`` (CuPy) or ``<variant>.cubin.cu`` (the
compile stage), and included headers by their path.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .long_table import kernel_actions

FINDING_COLUMNS = ["config_id", "kernel_id", "kernel_name", "tier", "rule", "section", "type",
                   "title", "message", "speedup_pct", "speedup_kind", "focus"]  # fmt: skip
LINE_COLUMNS = [
    "config_id", "kernel_id", "kernel_name", "file", "line", "code", "samples", "samples_pct",
    "top_reason", "top_reason_pct", "sass", "global_requests", "sectors_per_request",
    "ideal_sectors_per_request", "shared_conflict_ways",
]  # fmt: skip
# ncu_report's MsgType and SpeedupType, by value (tests check them against the module)
MESSAGE_TYPES = {0: "none", 1: "info", 2: "optimization", 3: "warning", 4: "error"}
SPEEDUP_KINDS = {0: "unknown", 1: "local", 2: "global"}
STALL_SAMPLES = "smsp__pcsamp_warps_issue_stalled_"
# ncu's links: @section:<id>:<label>@ and @url:<label>:<address>@
_LINK = re.compile(r"@(section|url):([^:@]*)(?::([^@]*))?@")


def _literal(value: Any) -> Any:
    """A payload value as data: the text of a Python literal becomes that literal."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def plain(text: str) -> str:
    """A rule message without ncu's link markup: each link becomes its label."""

    def label(match: re.Match) -> str:
        kind, first, rest = match.groups()
        return (rest or first) if kind == "section" else first

    return _LINK.sub(label, text).strip()


def finding(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """One rule result as a row (None for a rule that said nothing)."""
    fields = {k: _literal(v) for k, v in result.items()}
    message = fields.get("rule_message") or {}
    if isinstance(message, Mapping):  # the text form nests the rest inside the message
        fields = {**{k: _literal(v) for k, v in message.items()}, **fields}
    else:
        message = {"message": str(message)}
    text = plain(str(message.get("message") or ""))
    title = str(message.get("title") or "")
    if not text and not title:
        return None
    speedup = _literal(fields.get("speedup_estimation")) or {}
    if not isinstance(speedup, Mapping):
        speedup = {}
    value = speedup.get("speedup", speedup.get("value"))
    focus = _literal(fields.get("focus_metrics")) or []
    shown = [{"name": f.get("name"), "value": f.get("value")} for f in focus
             if isinstance(f, Mapping)]  # fmt: skip
    return {
        "rule": str(fields.get("rule_identifier") or ""),
        "section": str(fields.get("section_identifier") or ""),
        "type": MESSAGE_TYPES.get(message.get("type"), str(message.get("type", ""))),
        "title": title,
        "message": text,
        "speedup_pct": float(value) if isinstance(value, int | float) else math.nan,
        "speedup_kind": SPEEDUP_KINDS.get(speedup.get("type"), ""),
        "focus": json.dumps(shown),
    }


def read_findings(path: Path, tier: str) -> pd.DataFrame:
    """Every rule result of every kernel of a report that says something."""
    rows = []
    for config, kernel_id, action in kernel_actions(path):
        if config is None:
            continue
        for result in action.rule_results_as_dicts():
            row = finding(result)
            if row is not None:
                rows.append({"config_id": config, "kernel_id": kernel_id,
                             "kernel_name": action.name(), "tier": tier, **row})  # fmt: skip
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


def _per_pc(action: Any, metric: str) -> dict[int, float]:
    """An instanced metric's values by PC ({} where the report lacks it)."""
    if metric not in set(action.metric_names()):
        return {}
    value = action[metric]
    if not value.has_correlation_ids():
        return {}
    ids = value.correlation_ids()
    return {ids.as_uint64(i): value.as_double(i) for i in range(value.num_instances())}


def _file_name(raw: str, own: Path, kernels_dir: Path) -> tuple[str, Path | None]:
    """The source file a line belongs to, as shown (relative to ``kernels_dir``) and as read
    for its text: the variant's own source is named ``*.cubin.cu`` (compile.stage); a header
    keeps its path. A file outside ``kernels_dir`` (the toolkit's headers) keeps its own
    name and is never read."""
    path = own.resolve() if raw.endswith(".cubin.cu") else Path(raw)
    if path.is_absolute() and path.is_relative_to(kernels_dir):
        return str(path.relative_to(kernels_dir)), path
    return raw, None


def _line_text(path: Path | None, line: int, cache: dict[Path, list[str]]) -> str:
    if path is None or not path.is_file():
        return ""
    lines = cache.setdefault(path, path.read_text().splitlines())
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def read_source_lines(path: Path, own: Callable[[str], Path], kernels_dir: Path) -> pd.DataFrame:
    """Per kernel and source line: the stall samples (share of the kernel's, the dominant
    reason and its share, the hottest SASS instruction) and, for lines with memory
    instructions, global sectors per request against the ideal and shared-memory bank
    conflicts (ways). ``own`` gives the .cu file of a configuration's variant; files are
    named relative to ``kernels_dir``."""
    rows, cache = [], {}
    kernels_dir = kernels_dir.resolve()
    for config, kernel_id, action in kernel_actions(path):
        if config is None:
            continue
        samples = _per_pc(action, "smsp__pcsamp_sample_count")
        reasons = {m[len(STALL_SAMPLES):]: _per_pc(action, m) for m in action.metric_names()
                   if m.startswith(STALL_SAMPLES) and not m.endswith("_not_issued")}  # fmt: skip
        sectors = _per_pc(action, "memory_l2_theoretical_sectors_global")
        ideal = _per_pc(action, "memory_l2_theoretical_sectors_global_ideal")
        requests = _per_pc(action, "memory_l1_tag_requests_global")
        conflicts = _per_pc(action, "derived__memory_l1_conflicts_shared_nway")
        total = sum(samples.values())
        lines: dict[tuple[tuple[str, Path | None], int], dict[str, Any]] = defaultdict(
            lambda: {"samples": 0.0, "reasons": defaultdict(float), "pcs": [], "mem": []}
        )
        for pc in {*samples, *sectors, *conflicts}:
            info = action.source_info(pc)
            if info is None:
                continue
            key = (_file_name(info.file_name(), own(config), kernels_dir), int(info.line()))
            entry = lines[key]
            entry["samples"] += samples.get(pc, 0.0)
            entry["pcs"].append((samples.get(pc, 0.0), pc))
            for reason, by_pc in reasons.items():
                entry["reasons"][reason] += by_pc.get(pc, 0.0)
            if pc in sectors or pc in conflicts:
                entry["mem"].append(pc)
        for ((shown, file), line), entry in lines.items():
            waiting = {r: n for r, n in entry["reasons"].items() if r != "selected"}  # issuing
            reason = max(waiting, key=waiting.__getitem__, default="")
            hottest = max(entry["pcs"])[1]
            req = sum(requests.get(pc, 0.0) for pc in entry["mem"])
            ways = [conflicts[pc] for pc in entry["mem"] if pc in conflicts]
            rows.append({
                "config_id": config, "kernel_id": kernel_id, "kernel_name": action.name(),
                "file": shown,
                "line": line, "code": _line_text(file, line, cache),
                "samples": entry["samples"],
                "samples_pct": 100 * entry["samples"] / total if total else math.nan,
                "top_reason": reason if entry["samples"] else "",
                "top_reason_pct": 100 * waiting[reason] / entry["samples"]
                if entry["samples"] and reason else math.nan,
                "sass": action.sass_by_pc(hottest).strip(),
                "global_requests": req,
                "sectors_per_request": sum(sectors.get(pc, 0.0) for pc in entry["mem"]) / req
                if req else math.nan,
                "ideal_sectors_per_request": sum(ideal.get(pc, 0.0) for pc in entry["mem"]) / req
                if req else math.nan,
                "shared_conflict_ways": max(ways) if ways else math.nan,
            })  # fmt: skip
    table = pd.DataFrame(rows, columns=LINE_COLUMNS)
    return table.sort_values(["config_id", "kernel_id", "samples"], ascending=[True, True, False],
                             ignore_index=True)  # fmt: skip
