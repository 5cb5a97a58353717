"""report.html as a person sees it: the page of a comparison holding every category, loaded by headless Chromium
(Debian's, installed by .ci/run; driven by Playwright, which never downloads a browser of its own). Checks what is
on screen — the banner, a regressed path's failed check, the lock diff, what is folded away — that the page fetches
nothing, and that it fits a phone's width. GYMGATE_REPORT_SCREENSHOT=FILE also keeps a screenshot (docs/)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gymgate.harness.reports import compare_and_report
from tests.helpers import NEWER_RESULT_FIELDS, bump_runs, default_environments, every_category_runs

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.is_file(), f"{CHROMIUM} is missing: .ci/run installs Debian's chromium (apt-get install chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True, timeout=60_000)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def report(tmp_path, capsys) -> Path:
    base, cand = every_category_runs(tmp_path)
    assert compare_and_report(base, cand, cand, full=False) == 1
    capsys.readouterr()
    return cand / "report.html"


def _open(browser, page_file: Path, width: int, height: int):
    page = browser.new_page(viewport={"width": width, "height": height})
    fetched: list[str] = []

    def only_the_file(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_file)
    page.goto(page_file.as_uri(), wait_until="load", timeout=30_000)
    return page, fetched


def test_a_person_sees_the_verdict_and_what_broke(browser, report):
    page, fetched = _open(browser, report, 1280, 900)
    banner = page.locator("#verdict")
    assert banner.is_visible()
    text = banner.inner_text()
    assert text.startswith("FAIL") and "1 regressed, 1 broken, 1 changed" in text and "0.3.0" in text
    assert banner.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(198, 40, 40)"  # red

    regressed = page.locator("#path-a-accepted")
    assert regressed.is_visible()
    seen = regressed.inner_text()
    assert "regressed" in seen and "PASS → FAIL" in seen
    check = regressed.locator("table.checks tr").nth(1)
    cells = [c.strip() for c in check.locator("td").all_inner_texts()]
    assert cells == ["[reward] reward", "1.0", "0.0"]  # the failed check, expected beside what the candidate got

    # A changed path is shown by its bundle of changes (report/grouping.py), not a card of its own.
    changed = page.locator("#change-1")
    assert (
        "`requests.policy.*.body.seed` new in 0.4.0" in changed.inner_text() and "f × accepted" in changed.inner_text()
    )
    assert changed.locator("table.changes").is_visible() and page.locator("#path-f-accepted").count() == 0
    flaky = page.locator("#path-b-rejected")
    assert "flaky on both refs" in flaky.inner_text()
    chips = dict(chip.strip().rsplit(" ", 1) for chip in page.locator("#categories li").all_inner_texts())
    assert len(chips) == 11 and chips["regressed"] == "1" and chips["same-pass"] == "1"

    # Folded away until asked for: every path's row.
    everything = page.locator("#all-paths table")
    assert not everything.is_visible()
    page.locator("#all-paths summary").click()
    assert everything.is_visible() and everything.locator("tr").count() == 12  # header + eleven paths
    assert fetched == []  # self-contained: nothing from any network
    page.close()


def test_the_page_fits_a_phone(browser, report):
    page, _ = _open(browser, report, 390, 844)
    assert page.locator("#verdict").is_visible()
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a phone's screen"
    keep = os.environ.get("GYMGATE_REPORT_SCREENSHOT")
    if keep:
        desktop = browser.new_page(viewport={"width": 1100, "height": 900})
        desktop.goto(report.as_uri())
        desktop.screenshot(path=keep, full_page=True)
        desktop.close()
    page.close()


SEVEN = default_environments()


def _page_of(tmp_path, capsys, envs, **kinds) -> Path:
    base, cand = bump_runs(tmp_path, envs, **kinds)
    compare_and_report(base, cand, cand, full=False)
    capsys.readouterr()
    return cand / "report.html"


def _keep(page, name: str) -> None:
    """GYMGATE_REPORT_SCREENSHOTS=DIR keeps each page's screenshot there (docs/images)."""
    where = os.environ.get("GYMGATE_REPORT_SCREENSHOTS")
    if where:
        page.screenshot(path=str(Path(where) / name), full_page=True)


@pytest.mark.parametrize("size", [14, 500])
def test_a_bump_of_14_or_500_paths_reads_in_a_few_screens(browser, tmp_path, capsys, size):
    """A downgrade-shaped bump (every passing path changed the same way) with regressions of two kinds: the page
    says it in a few screens whatever the number of paths — one line per root cause, one card per bundle of
    changes, path cards past the first 30 folded."""
    envs = SEVEN if size == 14 else [f"env{n:03d}" for n in range(size // 2)]
    regressed = envs[:1] if size == 14 else envs[:40]
    report = _page_of(tmp_path, capsys, envs, regressed=regressed, contract=envs[-1:])
    page, fetched = _open(browser, report, 1100, 900)
    assert page.locator("#verdict").inner_text().count("downgrade 0.7.0 → 0.4.0") == 1
    causes = page.locator("#causes > li").all_inner_texts()
    assert len(causes) == 3, causes  # reward, request contract, and every unacknowledged change as one line
    bundles = page.locator("section[id^=change-]")
    assert bundles.count() == 1
    head = bundles.first.locator("header").inner_text()
    assert head.startswith(f"{len(NEWER_RESULT_FIELDS)} fields of 0.7.0's result that the older 0.4.0 lacks")
    assert bundles.first.locator("table.changes tr").count() == 1 + len(NEWER_RESULT_FIELDS)
    # One card per root cause: the paths that share it are listed under its first path, not repeated as cards.
    cards = page.locator("section.card[id^=path-]:visible")
    failing = 2 * (len(regressed) + 1)  # the regressed environments' and the contract environment's paths
    said = cards.all_inner_texts()
    shown = len(said) + sum(int(m) for text in said for m in re.findall(r"and (\d+) more paths? with the same", text))
    assert len(said) == 2 and shown == failing, said  # the reward regression, the request contract's
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < 900 * 6, f"the page is {height}px tall: {height / 900:.1f} screens"
    # The answer first, then what to run (the real run folders), then where it changed, as a picture.
    assert page.locator("#answer").inner_text().startswith("Can I bump? Not yet: ")
    assert re.search(r"(gymgate|nox -s) ack ", page.locator("#next").inner_text())
    assert page.locator("#grid svg g[data-tone=bad]").count() >= 1
    assert fetched == []
    _keep(page, f"report-page-{size}.png")
    page.close()
    phone, _ = _open(browser, report, 390, 844)
    assert phone.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
    phone.close()
