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
from .search_report import search_markdown
from .summary import markdown, summarize
from .tables import findings_page, write_html_table


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
    write_html_table(summary, csv.with_suffix(".html"), f"{experiment}: each variant's best",
                     "Each variant's fastest configuration per problem size.")  # fmt: skip
    write_html_table(changes, rungs_csv.with_suffix(".html"), f"{experiment}: rung to rung",
                     "Per size, what changed from each rung to the next.")  # fmt: skip
    findings_page(findings, findings_path.with_suffix(".html"), experiment)
    return (f"wrote {csv}, {rungs_csv} and {md} and their pages: {len(summary)} rows, "
            f"{len(changes)} rung changes")  # fmt: skip
