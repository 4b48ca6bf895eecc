"""The tables a report quotes, in the seeds' style: for each problem size, each variant's
best configuration with its time, throughput, share of the family's library baseline of
the same precision, speedup over the first rung, and bound with its level.

Only configurations that measured ok compete: a wrong or failed one never wins "best".
"""

from __future__ import annotations

import pandas as pd

from .spec import Family
from .vocab import OK

COLUMNS = ["variant", "parameters", "dtype", "time_ms", "time_ms_iqr", "throughput", "unit",
           "pct_of_library", "library", "speedup", "speedup_over", "bound", "bound_level",
           "configurations", "failed"]  # fmt: skip


def _parameters(row: pd.Series, family: Family) -> str:
    params = family.variants[row["variant"]].params
    return ", ".join(f"{p}={int(row[p])}" for p in params if p in row and pd.notna(row[p]))


def summarize(table: pd.DataFrame, family: Family) -> pd.DataFrame:
    """One row per (problem size, variant): the best ok configuration, ranked by the
    family's figure of merit; ``configurations`` counts what was tried, ``failed`` what
    did not measure ok (skipped excluded)."""
    dims = list(family.dims)
    merit = "gbps" if family.merit == "bytes" else "gflops"
    unit = "GB/s" if family.merit == "bytes" else "TFLOP/s"
    scale = 1.0 if family.merit == "bytes" else 1e3
    tried = table[table["status"] != "skipped"]
    counts = tried.groupby([*dims, "variant"]).size().rename("configurations")
    failed = tried[tried["status"] != OK].groupby([*dims, "variant"]).size().rename("failed")
    ok = table[table["status"] == OK].astype({merit: float})
    if ok.empty:
        return pd.DataFrame(columns=[*dims, *COLUMNS])
    best = ok.loc[ok.groupby([*dims, "variant"])[merit].idxmax()].copy()
    best["parameters"] = best.apply(_parameters, axis=1, family=family)
    best["throughput"] = best[merit] / scale
    best["unit"] = unit
    library = best[best["baseline"].astype(bool) & (best["runs_on"] == "gpu")]
    fastest = library.loc[library.groupby([*dims, "dtype"])["time_ms"].idxmin()]
    reference = fastest.set_index([*dims, "dtype"])[["time_ms", "variant"]]
    keys = pd.MultiIndex.from_frame(best[[*dims, "dtype"]])
    matched = reference.reindex(keys)
    best["pct_of_library"] = 100 * matched["time_ms"].to_numpy() / best["time_ms"].to_numpy()
    best["library"] = matched["variant"].to_numpy()
    first = family.speedup_over or family.ordered(list(best["variant"].unique()))[0]
    rung = best[best["variant"] == first].set_index(dims)["time_ms"]
    best["speedup"] = (
        rung.reindex(pd.MultiIndex.from_frame(best[dims])).to_numpy() / best["time_ms"]
    )
    best["speedup_over"] = first
    best = best.join(counts, on=[*dims, "variant"]).join(failed, on=[*dims, "variant"])
    best["failed"] = best["failed"].fillna(0).astype(int)
    rank = {v: i for i, v in enumerate(family.ordered(list(best["variant"].unique())))}
    best = best.sort_values(
        [*dims, "variant"], key=lambda c: c.map(rank) if c.name == "variant" else c
    )
    return best[[*dims, *COLUMNS]].reset_index(drop=True)


def _cell(value: object, fmt: str) -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and pd.isna(value))
        else format(value, fmt)
    )


def markdown(summary: pd.DataFrame, family: Family, experiment: str) -> str:
    """The summary as Markdown: a table per problem size, variants in ladder order."""
    dims = list(family.dims)
    lines = [f"# {experiment}", ""]
    if summary.empty:
        return "\n".join([*lines, "No configuration measured ok.", ""])
    unit = summary["unit"].iloc[0]
    for size, rows in summary.groupby(dims, sort=False):
        values = size if isinstance(size, tuple) else (size,)
        lines += [", ".join(f"{d} = {v}" for d, v in zip(dims, values, strict=True)), ""]
        lines += [f"| variant | parameters | time (ms) | {unit} | % of library | speedup over "
                  f"{rows['speedup_over'].iloc[0]} | bound (level) |",
                  "|---|---|---:|---:|---:|---:|---|"]  # fmt: skip
        for row in rows.itertuples():
            library = (f"{_cell(row.pct_of_library, '.1f')} ({row.library})"
                       if isinstance(row.library, str) else "–")  # fmt: skip
            bound = (
                f"{row.bound} ({row.bound_level})"
                if isinstance(row.bound, str) and row.bound
                else "–"
            )
            failed = f" ({row.failed} of {row.configurations} failed)" if row.failed else ""
            cells = [f"{row.variant}{failed}", row.parameters or "–", _cell(row.time_ms, ".4f"),
                     _cell(row.throughput, ",.2f"), library, _cell(row.speedup, ".2f"),
                     bound]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
