"""The documentation: a short README, the pages it points to, every relative link and
anchor resolving, and the reference pages as their schemas say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT
from ncuflow.reference import DOCS, PAGES, markdown

PAGES_MD = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lowercase, punctuation dropped, spaces to
    hyphens, repeats numbered."""
    found: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text.replace("`", "")).replace(" ", "-")
        candidate, n = slug, 1
        while candidate in found:
            candidate, n = f"{slug}-{n}", n + 1
        found.add(candidate)
    return found


def test_the_readme_is_short_and_holds_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert ".venv/bin/pip install -e . && .venv/bin/snakemake --cores 1" in readme
    assert ".venv/bin/pip install -e '.[test]' && .venv/bin/pytest" in readme
    for page in ("guide", "methods", "results", "troubleshooting", "design", "development",
                 "reference/config", "reference/kernels"):  # fmt: skip
        assert f"(docs/{page}.md)" in readme, page


@pytest.mark.parametrize("page", PAGES_MD, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code is not linked
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        unanchored = anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        if not resolved.exists() or unanchored:
            broken.append(target)
    assert not broken, broken


@pytest.mark.parametrize("page", list(PAGES))
def test_the_reference_is_generated_from_the_schemas(page: str) -> None:
    """A key added to a schema, or described otherwise, changes its page: run
    ``python -m ncuflow.reference`` and commit both."""
    assert (DOCS / page).read_text() == markdown(page)
