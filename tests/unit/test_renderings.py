"""One comparison, many renderings: report.md, report.html, results.json, junit.xml, retry.txt and the terminal are
all rendered from the one Comparison value, so they agree on every path's category (every category present)."""

from __future__ import annotations

import json
import re
from collections import Counter

from gymgate import verdict as c
from gymgate.compare.runs import compare_runs
from gymgate.harness.reports import compare_and_report
from gymgate.report.outputs import RETRY_CATEGORIES, junit_categories
from tests.helpers import CASES, every_category_runs


def _markdown_categories(text: str) -> dict[str, str]:
    found, heading = {}, None
    for line in text.splitlines():
        if line.startswith("### "):
            heading = line[4:]
        elif heading in c.CATEGORIES and line.startswith("- `"):
            found[line.split("`")[1]] = heading
        elif line.startswith("- ") and line[2:].split(":")[0] in c.CATEGORIES and "`" in line:
            category = line[2:].split(":")[0]  # the collapsed "same" buckets: - same-pass: `p`, `q`
            found.update({p: category for p in re.findall(r"`([^`]+)`", line)})
    return found


def test_every_rendering_agrees_on_every_category(tmp_path, capfd):
    base, cand = every_category_runs(tmp_path)
    comparison = compare_runs(base, cand)
    truth = {p.path: p.category for p in comparison.paths}
    assert truth == {p: spec[3] for p, spec in CASES.items()}
    assert set(truth.values()) == set(c.CATEGORIES)  # every category is present

    code = compare_and_report(base, cand, cand, full=False)
    terminal = capfd.readouterr().out
    assert code == comparison.exit_code == 1

    assert _markdown_categories((cand / "report.md").read_text()) == truth
    page = (cand / "report.html").read_text()
    rows = re.findall(r'<tr data-category="([^"]+)"><td><code>([^<]+)</code>', page)
    assert {path: category for category, path in rows} == truth
    results = json.loads((cand / "results.json").read_text())
    assert {p["path"]: p["category"] for p in results["paths"]} == truth
    assert results["exit_code"] == code and results["verdict"] == comparison.verdict
    assert junit_categories(cand / "junit.xml") == truth
    retry = set((cand / "retry.txt").read_text().split())
    assert retry == {p for p, category in truth.items() if category in RETRY_CATEGORIES}
    # The terminal shows the verdict and the categories counted: the same counts.
    counted = " ".join(terminal[terminal.index("Paths: ") :].split("\n\n")[0].split())  # its rows, joined
    counts = {name: int(n) for n, name in re.findall(r"(\d+) ([a-z -]+?)(?: ·|$)", counted[len("Paths: ") :])}
    assert counts == Counter(truth.values())
    assert f"Verdict: {comparison.verdict}." in " ".join(terminal.split())
