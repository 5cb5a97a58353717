"""Screenshots of report pages for the docs, in the system's Chromium (as the report page test opens them):

    python tools/screenshot.py PAGE.html OUT.png [--width 1100] [--height 900] [--full]

The pages are self-contained: nothing is fetched from any network (a request is refused)."""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--full", action="store_true", help="the whole page, not the first screen")
    args = parser.parse_args()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.route("http*://**", lambda route: route.abort())
            page.goto(args.page.resolve().as_uri(), timeout=60_000)
            page.screenshot(path=str(args.out), full_page=args.full)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
