"""The summary stage's files (rule summary): each variant's best per size (CSV, page),
what changed from rung to rung (CSV, page), the findings' page, and summary.md with the
study's questions answered."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..gpu import device_model
from ..spec import load_family
from ..study.questions import questions_from_json
from . import questions, rungs
from .energy_tables import energy_markdown
from .search_summary import search_markdown
from .summary import markdown, summarize
from .tables import (
    RUNG_WRAP,
    SUMMARY_WRAP,
    findings_page,
    rungs_view,
    summary_view,
    write_html_table,
)


def write_summary(table_path: Path, kernels_dir: Path, findings_path: Path,
                  questions_path: Path | None, out: tuple[Path, Path, Path],
                  rounds: Sequence[dict] = ()) -> str:  # fmt: skip
    """Write ``out`` (the summary CSV, the rung changes' CSV, summary.md) and their pages
    from an experiment's table and findings (and a search's ``rounds``, what it tried);
    what was written, in a line."""
    csv, rungs_csv, md = out
    table = pd.read_parquet(table_path)
    family = load_family(kernels_dir, str(table["family"].iloc[0]))
    experiment = str(table["experiment"].iloc[0])
    summary = summarize(table, family)
    summary.to_csv(csv, index=False, float_format="%.6g")
    findings = pd.read_parquet(findings_path)
    changes = rungs.rung_changes(table, family, findings)
    changes.to_csv(rungs_csv, index=False, float_format="%.6g")
    text = markdown(summary, family, experiment) + "\n" + rungs.markdown(changes)
    if rounds:
        text += "\n" + search_markdown(table, rounds)
    energy = energy_markdown(table, family)
    if energy:
        text += "\n" + energy
    # the GPU models the answers were measured on (host rows and UUIDs left out)
    devices = table["device"].dropna() if "device" in table else pd.Series(dtype=str)
    models = sorted({device_model(d) for d in devices if not d.startswith("host: ")})
    asked = questions.markdown(
        summary,
        questions_from_json(questions_path.read_text() if questions_path else "[]"),
        family.problem_columns,
        " and ".join(models) or None,
    )
    md.write_text(text + ("\n" + asked if asked else ""))
    # the pages open on their point (tables.summary_view, rungs_view, findings_view); the
    # CSV files keep every column
    shown, same = summary_view(summary, family.problem_columns)
    write_html_table(shown, csv.with_suffix(".html"), f"{experiment}: each variant's best",
                     "Each variant's fastest configuration that measured ok, per problem size: "
                     "its median time, throughput, share of the fastest library baseline of "
                     "the same precision (% of library) and bound (level), then the rest. "
                     f"{same}".strip(), SUMMARY_WRAP)  # fmt: skip
    write_html_table(rungs_view(changes), rungs_csv.with_suffix(".html"),
                     f"{experiment}: rung to rung",
                     "Per size, what changed from each rung of the ladder to the next, at "
                     "their fastest configurations: the speedup, the bound, the metrics that "
                     "moved most and ncu's findings that went away or appeared.",
                     RUNG_WRAP)  # fmt: skip
    findings_page(findings, findings_path.with_suffix(".html"), experiment, table, family)
    return (f"wrote {csv}, {rungs_csv} and {md} and their pages: {len(summary)} rows, "
            f"{len(changes)} rung changes")  # fmt: skip
