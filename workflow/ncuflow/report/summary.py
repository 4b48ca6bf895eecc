"""The tables a report quotes, in the seeds' style: for each problem size, each variant's
best configuration with its time, throughput, share of the family's library baseline of
the same precision, speedup over the first rung, and bound with its level.

Only configurations that measured ok compete: a wrong or failed one never wins "best".
"% of library" has one definition here (``pct_of_library``): the time of the fastest GPU
library baseline of the same dtype at the same size, over the row's time, in percent.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..spec import Family
from ..vocab import OK, SKIPPED

COLUMNS = ["variant", "parameters", "dtype", "time_ms", "time_ms_iqr", "time_ci95_pct",
           "throughput", "unit", "pct_of_library", "library", "speedup", "speedup_over",
           "ai_model", "ai_dram", "bound", "bound_level", "ncu_bottleneck", "top_finding",
           "top_finding_speedup_pct", "top_stall", "configurations", "failed",
           "power_limited"]  # fmt: skip


def merit_of(family: Family) -> tuple[str, str, str]:
    """(column, base unit, what it is) of the family's figure of merit."""
    if family.merit == "bytes":
        return "gbps", "B/s", "compulsory bytes / median time"
    return "gflops", "FLOP/s", "analytic FLOPs / median time"


def best_configs(rows: pd.DataFrame, keys: list[str], merit: str) -> pd.DataFrame:
    """Each group's best ok configuration (highest figure of merit), grouped by ``keys``
    (the variant and some dimensions), in the groups' sorted order."""
    rows = rows[rows["status"] == OK].astype({merit: float})
    return rows.loc[rows.groupby(keys)[merit].idxmax()]


def pct_of_library(rows: pd.DataFrame, dims: list[str]) -> tuple[pd.Series, pd.Series]:
    """(% of library, the library's name) of each of ``rows`` (best configurations): the
    fastest GPU library baseline among ``rows`` of the same dtype at the same ``dims``, its
    time over the row's, in percent; NaN where there is none."""
    library = rows[rows["baseline"].astype(bool) & (rows["runs_on"] == "gpu")]
    keys = [*dims, "dtype"]
    fastest = library.loc[library.groupby(keys)["time_ms"].idxmin()]
    matched = fastest.set_index(keys)[["time_ms", "variant"]].reindex(
        pd.MultiIndex.from_frame(rows[keys])
    )
    pct = 100 * matched["time_ms"].to_numpy() / rows["time_ms"].astype(float).to_numpy()
    return (pd.Series(pct, index=rows.index),
            pd.Series(matched["variant"].to_numpy(), index=rows.index))  # fmt: skip


def ladder(table: pd.DataFrame, size: dict[str, int]) -> pd.DataFrame:
    """Each variant's fastest ok configuration at one problem size, with its share of the
    library (``pct_of_library``) and its TFLOP/s; variants in the order the table has them."""
    at_size = table[(table[list(size)] == pd.Series(size)).all(axis=1)]
    rows = best_configs(at_size, ["variant"], "gflops").copy()
    order = {v: i for i, v in enumerate(dict.fromkeys(at_size["variant"]))}
    rows = rows.sort_values("variant", key=lambda c: c.map(order))
    rows["pct_of_library"], rows["library"] = pct_of_library(rows, list(size))
    rows["tflops"] = rows["gflops"] / 1e3
    return rows.reset_index(drop=True)


def _parameters(row: pd.Series, family: Family) -> str:
    params = family.variant(row["variant"]).params
    return ", ".join(f"{p}={int(row[p])}" for p in params if p in row and pd.notna(row[p]))


def summarize(table: pd.DataFrame, family: Family) -> pd.DataFrame:
    """One row per (problem size, variant): the best ok configuration, ranked by the
    family's figure of merit; ``configurations`` counts what was tried, ``failed`` what
    did not measure ok (skipped excluded)."""
    dims = family.problem_columns
    merit = merit_of(family)[0]
    unit, scale = ("GB/s", 1.0) if family.merit == "bytes" else ("TFLOP/s", 1e3)
    tried = table[table["status"] != SKIPPED]
    counts = tried.groupby([*dims, "variant"]).size().rename("configurations")
    failed = tried[tried["status"] != OK].groupby([*dims, "variant"]).size().rename("failed")
    if not (table["status"] == OK).any():
        return pd.DataFrame(columns=[*dims, *COLUMNS])
    best_rows = best_configs(table, [*dims, "variant"], merit).copy()
    best_rows["parameters"] = best_rows.apply(_parameters, axis=1, family=family)
    best_rows["throughput"] = best_rows[merit] / scale
    best_rows["unit"] = unit
    best_rows["pct_of_library"], best_rows["library"] = pct_of_library(best_rows, dims)
    first = family.speedup_over or family.ordered(list(best_rows["variant"].unique()))[0]
    rung = best_rows[best_rows["variant"] == first].set_index(dims)["time_ms"]
    best_rows["speedup"] = (
        rung.reindex(pd.MultiIndex.from_frame(best_rows[dims])).to_numpy() / best_rows["time_ms"]
    )
    best_rows["speedup_over"] = first
    best_rows = best_rows.join(counts, on=[*dims, "variant"]).join(failed, on=[*dims, "variant"])
    if "power_limited" not in best_rows:  # a table collected before the power verdict
        best_rows["power_limited"] = ""
    best_rows["failed"] = best_rows["failed"].fillna(0).astype(int)
    rank = {v: i for i, v in enumerate(family.ordered(list(best_rows["variant"].unique())))}
    best_rows = best_rows.sort_values(
        [*dims, "variant"], key=lambda c: c.map(rank) if c.name == "variant" else c
    )
    return best_rows[[*dims, *COLUMNS]].reset_index(drop=True)


def _cell(value: object, fmt: str) -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and pd.isna(value))
        else format(value, fmt)
    )


def _intensities(row: object) -> str:
    """'20.9 (18.3)': the analytic intensity and, where profiled, the measured DRAM one."""
    model, dram = getattr(row, "ai_model", None), getattr(row, "ai_dram", None)
    if model is None or pd.isna(model):
        return _cell(dram, ".1f") if dram is not None and pd.notna(dram) else "–"
    measured = f" ({dram:.1f})" if dram is not None and pd.notna(dram) else ""
    return f"{model:.1f}{measured}"


def written(value: object) -> str:
    """A parameter's or a size's value as a reader writes it: 32, not 32.0; 0.5; text as
    it is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{int(value)}" if float(value).is_integer() else f"{float(value):g}"
    return str(value)


def bound_and_level(bound: object, level: object, empty: str = "–", limited: object = "") -> str:
    """A row's bound with the level it names, "memory (dram)", and the limit NVML said held
    its clocks (``limited``, its power_limited: "compute (tensor), power-limited"); ``empty``
    where it has no bound."""
    if not isinstance(bound, str) or not bound:
        return empty
    shown = f"{bound} ({level})" if isinstance(level, str) and level else bound
    return f"{shown}, {limited}-limited" if isinstance(limited, str) and limited else shown


def _row_cells(row: Any) -> list[str]:
    """One row of the Markdown table, a cell per column of ``markdown``'s heading."""
    library = (f"{_cell(row.pct_of_library, '.1f')} ({row.library})"
               if isinstance(row.library, str) else "–")  # fmt: skip
    bound = bound_and_level(row.bound, row.bound_level, limited=row.power_limited)
    failed = f" ({row.failed} of {row.configurations} failed)" if row.failed else ""
    finding = "–"
    if isinstance(row.top_finding, str) and row.top_finding:
        finding = f"{row.top_finding} (est. {row.top_finding_speedup_pct:.0f} %)"
    return [f"{row.variant}{failed}", row.parameters or "–", _cell(row.time_ms, ".4f"),
            _cell(row.throughput, ",.2f"), library, _cell(row.speedup, ".2f"),
            _intensities(row), bound, finding.replace("|", "/")]  # fmt: skip


def markdown(summary: pd.DataFrame, family: Family, experiment: str) -> str:
    """The summary as Markdown: a table per problem size, variants in ladder order; a
    column that is a dash in every row of every size (a speedup over a first rung the study
    lacks, findings never profiled) left out."""
    dims = family.problem_columns
    lines = [f"# {experiment}", ""]
    if summary.empty:
        return "\n".join([*lines, "No configuration measured ok.", ""])
    unit = summary["unit"].iloc[0]
    heading = ["variant", "parameters", "time (ms)", unit, "% of library",
               f"speedup over {summary['speedup_over'].iloc[0]}", "FLOP/B: model (DRAM)",
               "bound (level)", "ncu's top finding"]  # fmt: skip
    align = ["---", "---", "---:", "---:", "---:", "---:", "---:", "---", "---"]
    sizes = [(size, [_row_cells(row) for row in rows.itertuples()])
             for size, rows in summary.groupby(dims, sort=False)]  # fmt: skip
    kept = [i for i in range(len(heading))
            if i == 0 or any(cells[i] != "–" for _, rows in sizes for cells in rows)]  # fmt: skip
    for size, rows in sizes:
        values = size if isinstance(size, tuple) else (size,)
        lines += [", ".join(f"{d} = {v}" for d, v in zip(dims, values, strict=True)), ""]
        lines += ["| " + " | ".join(heading[i] for i in kept) + " |",
                  "|" + "|".join(align[i] for i in kept) + "|"]  # fmt: skip
        lines += ["| " + " | ".join(cells[i] for i in kept) + " |" for cells in rows]
        lines.append("")
    held = summary[summary["power_limited"].fillna("").astype(str) != ""]
    if len(held):
        lines += [f"{len(held)} of these ran while NVML reported the GPU held under its power "
                  "or thermal limit (marked power-limited or thermal-limited; the table's "
                  "`throttle` and `bound_reason` say when): their times are those of a "
                  "throttled GPU.", ""]  # fmt: skip
    return "\n".join(lines)
