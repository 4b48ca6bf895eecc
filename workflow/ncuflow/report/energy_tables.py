"""The energy tier's table and summary section (rules summary and energy_figure): per problem
size each variant's most energy-efficient configuration beside its fastest, and which
variant is the most efficient; apart from the figure (report.energy), so that the summary
stage does not import matplotlib."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..spec import Family
from ..vocab import OK
from .summary import written
from .tables import differing, one_value, without_empty, write_html_table


def energy_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that measured ok and have an energy."""
    if "energy_j" not in table:
        return table.iloc[0:0]
    return table[(table["status"] == OK) & table["energy_j"].notna()]


def counts_flops(rows: pd.DataFrame) -> bool:
    """Whether the rows count FLOPs (the roofline's y), else only bytes (GB per joule)."""
    return bool((rows["flops"].astype(float) > 0).all())


def most_efficient(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``, the row of least energy per launch (ties: the faster)."""
    ranked = rows.sort_values(["energy_j", "time_ms"], kind="stable")
    return ranked.groupby(keys, sort=False, dropna=False).head(1)


def energy_table(table: pd.DataFrame, family: Family) -> pd.DataFrame:
    """Per problem size and variant, its most energy-efficient configuration beside its
    fastest: energy (mJ), power (W), efficiency, time (ms), and whether they are one."""
    rows = energy_rows(table)
    keys = [*family.problem_columns, "variant"]
    if rows.empty:
        return pd.DataFrame(columns=keys)
    fastest = rows.sort_values("time_ms", kind="stable").groupby(keys, sort=False).head(1)
    fastest = fastest.set_index(keys)
    out = []
    for _, row in most_efficient(rows, keys).iterrows():
        quick = fastest.loc[tuple(row[k] for k in keys)]
        out.append({**{k: row[k] for k in keys}, "config_id": row["config_id"],
                    "energy_mj": 1e3 * row["energy_j"], "avg_power_w": row["avg_power_w"],
                    "gflops_per_w": row["gflops_per_w"], "gb_per_j": row["gb_per_j"],
                    "time_ms": row["time_ms"], "fastest_config_id": quick["config_id"],
                    "fastest_energy_mj": 1e3 * quick["energy_j"],
                    "fastest_time_ms": quick["time_ms"],
                    "sm_clock_mhz_energy": row.get("sm_clock_mhz_energy"),
                    "power_limited": row.get("power_limited") or ""})  # fmt: skip
    frame = pd.DataFrame(out).sort_values([*keys[:-1], "energy_mj"], kind="stable")
    return frame.reset_index(drop=True)


def energy_view(frame: pd.DataFrame, table: pd.DataFrame,
                family: Family) -> tuple[pd.DataFrame, str]:  # fmt: skip
    """The energy table as the report shows it, and the sentence naming what every row
    shares: variant, size, energy, power, efficiency first, then the time and the fastest
    configuration's; each configuration named by the parameters that differ between its
    variant's ("same" where the fastest is the most efficient); headings in words."""
    rows = energy_rows(table).set_index("config_id", drop=False)
    params = {v: list(family.variant(v).params) for v in rows["variant"].unique()}
    names = differing(rows.drop_duplicates("config_id"), params)
    shown = frame.copy()
    shown["configuration"] = shown["config_id"].map(names)
    pairs = zip(shown["config_id"], shown["fastest_config_id"], strict=True)
    shown["fastest"] = ["same" if a == b else names.get(b, b) for a, b in pairs]
    for column in ("energy_mj", "fastest_energy_mj"):  # whole millijoules past a joule
        shown[column] = [round(v) if v >= 1000 else v for v in shown[column]]
    headings = {"variant": "variant", **{d: d for d in family.problem_columns},
                "energy_mj": "energy (mJ)", "avg_power_w": "power (W)",
                "gflops_per_w": "GFLOP/J", "gb_per_j": "GB/J", "time_ms": "time (ms)",
                "configuration": "configuration", "power_limited": "power-limited",
                "sm_clock_mhz_energy": "SM clock (MHz)", "fastest": "fastest",
                "fastest_energy_mj": "its energy (mJ)",
                "fastest_time_ms": "its time (ms)"}  # fmt: skip
    shown = shown[[c for c in headings if c in shown]].rename(columns=headings)
    shown, note = one_value(shown, family.problem_columns)
    return without_empty(shown), note


def write_energy_table(table: pd.DataFrame, family: Family, csv: Path) -> pd.DataFrame:
    """energy.csv (every column) and its page (energy_view)."""
    frame = energy_table(table, family)
    frame.to_csv(csv, index=False, float_format="%.6g")
    shown, same = energy_view(frame, table, family) if len(frame) else (frame, "")
    write_html_table(shown, csv.with_suffix(".html"),
                     f"{table['experiment'].iloc[0]}: energy per variant",
                     "Per problem size, each variant's configuration of least energy per "
                     "launch (launched back to back, hot caches: docs/methods.md, Energy), "
                     "its average power and efficiency, beside the variant's fastest "
                     "configuration and its energy; power-limited: what held the clocks "
                     f"down meanwhile, where something did. {same}".strip())  # fmt: skip
    return frame


def energy_markdown(table: pd.DataFrame, family: Family) -> str:
    """summary.md's section on energy: per problem size, the most energy-efficient variant
    and whether it is also the fastest; the rows the power or heat held back."""
    rows = energy_rows(table)
    if rows.empty:
        return ""
    dims = family.problem_columns
    lines = ["## Energy", "",
             "| size | most efficient | energy (mJ) | power (W) | fastest | its energy (mJ) "
             "| also the fastest |", "|---|---|---:|---:|---|---:|---|"]  # fmt: skip
    answers = []
    for size, group in rows.groupby(dims, sort=True):
        size = size if isinstance(size, tuple) else (size,)
        where = ", ".join(f"{d} = {written(v)}" for d, v in zip(dims, size, strict=True))
        least = most_efficient(group, dims).iloc[0]
        quick = group.sort_values("time_ms", kind="stable").iloc[0]
        same = least["variant"] == quick["variant"]
        lines.append(f"| {where} | {least['variant']} | {1e3 * least['energy_j']:.4g} | "
                     f"{least['avg_power_w']:.0f} | {quick['variant']} | "
                     f"{1e3 * quick['energy_j']:.4g} | {'yes' if same else 'no'} |")  # fmt: skip
        if not same:
            more = 100 * (quick["energy_j"] / least["energy_j"] - 1)
            faster = 100 * (least["time_ms"] / quick["time_ms"] - 1)
            answers.append(f"At {where}, {least['variant']} uses the least energy per launch, "
                           f"but {quick['variant']} is {faster:.0f} % faster and uses "
                           f"{more:.0f} % more energy.")  # fmt: skip
    held = rows[rows["power_limited"].fillna("") != ""] if "power_limited" in rows else rows[:0]
    if len(held):
        kinds = ", ".join(
            f"{n} by its {k} limit" for k, n in held["power_limited"].value_counts().items()
        )
        answers.append(f"The GPU held its clocks down for {len(held)} configurations ({kinds}): "
                       "their times and energies are those of a throttled GPU.")  # fmt: skip
    else:
        answers.append("No configuration ran under a power or thermal limit.")
    return "\n".join([*lines, "", *answers, ""])
