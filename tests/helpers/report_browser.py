"""The Snakemake report as a person sees it: Debian's Chromium, headless and offline, driven by
Playwright (a dev dependency; its own browser downloads are never used).

    python -m tests.helpers.report_browser results/report.html docs/report.png

saves a screenshot of the report's leaderboard (the README's picture). Used by the report test
and for that picture only, so it lives with the tests.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package
# Headless and offline: nothing of Chromium's own (updates, sync, QUIC probes) reaches for the network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LEADERBOARD = ("1. Results", "results/leaderboard.html")
ANSWERS = ("2. Answers", "results/answers.html")


def require_chromium() -> Path:
    """Debian's Chromium, or a skip with the reason; in CI (POLYRAG_SHARED_DATA set) a missing one fails."""
    from tests.helpers.environment import skip_unless_required

    if CHROMIUM.exists():
        return CHROMIUM
    skip_unless_required(f"{CHROMIUM} not found: apt-get install chromium to render the report in a browser",
                         "POLYRAG_SHARED_DATA")


@dataclass
class Problems:
    """What went wrong while the page ran: script errors and requests beyond the file itself."""

    script_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)


@contextmanager
def open_report(report: Path, width: int = 1280, height: int = 800,
                chromium: Path = CHROMIUM) -> Iterator[tuple[object, Problems]]:
    """The report loaded in a fresh headless Chromium page, and the problems it records meanwhile.
    Requests other than the file and its data: URIs are refused: the report must be self-contained."""
    from playwright.sync_api import sync_playwright

    problems = Problems()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(15_000)
            page.on("console", lambda message: message.type == "error" and problems.script_errors.append(message.text))
            page.on("pageerror", lambda error: problems.script_errors.append(str(error)))

            def refuse(route):
                problems.outside_requests.append(route.request.url)
                route.abort()

            page.route(re.compile(r"^(?!file:|data:)"), refuse)
            page.goto(report.resolve().as_uri())
            yield page, problems
        finally:
            browser.close()


def report_categories(page) -> dict[str, list[str]]:
    """The report's results by category, as its own script holds them."""
    categories = page.evaluate("categories")
    return {name: [path for paths in sub.values() for path in paths] for name, sub in categories.items()}


def show_result(page, category: str, path: str) -> None:
    """Click through the report's menu to one result: back to the categories, into one, its eye button."""
    menu = page.locator("nav")
    if menu.locator("tr").count():  # inside a category: the breadcrumb leads back to all of them
        menu.get_by_text("Results", exact=True).click()
    menu.get_by_text(category, exact=True).click()
    menu.locator("tr", has_text=path).locator("a[iconname=eye]").click()


def leaderboard_models(page) -> list[str]:
    """The model column of the short leaderboard, the first table the report's leaderboard page
    shows (it sits in an iframe)."""
    show_result(page, *LEADERBOARD)
    table = page.frame_locator("iframe").locator("table").first
    column = table.locator("thead th").all_inner_texts().index("model") + 1
    return table.locator(f"tbody td:nth-child({column})").all_inner_texts()


def screenshot_leaderboard(report: Path, image: Path, width: int = 1600, height: int = 300) -> None:
    with open_report(report, width, height) as (page, problems):
        models = leaderboard_models(page)
        page.screenshot(path=str(image))
    if problems.script_errors or problems.outside_requests or not models:
        sys.exit(f"{report}: models {models}, script errors {problems.script_errors}, "
                 f"requests outside the file {problems.outside_requests}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    screenshot_leaderboard(Path(sys.argv[1]), Path(sys.argv[2]))
