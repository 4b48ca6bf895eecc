"""A screenshot of the HTML report (docs/report.png), taken with a real headless browser.

Needs Playwright (pip install playwright) and a Chromium (Debian: apt-get install
chromium); neither is a dependency of ncuflow.

    snakemake --cores 1 && snakemake --report results/report.html
    python docs/screenshot.py results/report.html docs/report.png
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright


def main(
    html: Path, out: Path, experiment: str = "matmul_ladder", figure: str = "roofline"
) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(html.resolve().as_uri())
        page.wait_for_timeout(1500)
        # the start page's link to the figure: one click, its caption beside it
        listed = page.locator(".prose li", has_text=experiment).first
        listed.get_by_role("link", name=figure.replace("_", " "), exact=True).click()
        page.wait_for_timeout(1500)
        page.screenshot(path=str(out))
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
