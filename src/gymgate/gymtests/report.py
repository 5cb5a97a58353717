"""How a bump's verdict on Gym's own tests reads: its verdict line, one line per environment (or agent, model, the
core) with tests of the baseline that fail on the candidate, one per vanished name, in the terminal; report
sections with every such test's failure and its file's change, the exclusions counted with their reasons; and a
page (gym-tests.html) of all of it. Decides nothing: gymtests.judge and gymtests.bump did."""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from collections.abc import Iterable

from markdown_it import MarkdownIt

from gymgate.atomic import write_text_atomic
from gymgate.gymtests.bump import GymTestsRun
from gymgate.gymtests.judge import MEANINGS, Side, TestCategory, TestVerdict
from gymgate.runfolder.folder import GYM_TESTS_MARKDOWN as MARKDOWN_FILE
from gymgate.runfolder.folder import GYM_TESTS_PAGE as HTML_FILE

NAMED = 3  # tests named on a terminal line
LISTED = 200  # tests listed per category in the reports (every test is in gym-tests.json)


def _short(test: str) -> str:
    return test.rsplit("::", 1)[-1]


def _names(run: GymTestsRun) -> tuple[str, str]:
    return str(run.baseline.get("name")), str(run.candidate.get("name"))


def _by_label(verdicts: Iterable[TestVerdict]) -> dict[str, list[TestVerdict]]:
    grouped: dict[str, list[TestVerdict]] = defaultdict(list)
    for verdict in verdicts:
        grouped[verdict.label].append(verdict)
    return grouped


def terminal_lines(run: GymTestsRun) -> list[str]:
    """The verdict line, then a line per label with unreviewed newly failing tests and per vanished name."""
    base, cand = _names(run)
    lines = [run.verdict]
    ours = [v for v in run.verdicts if v.of == Side.BASELINE]
    totals = Counter(v.label for v in ours if v.category not in (TestCategory.CANNOT_RUN, TestCategory.EXCLUDED))
    for label, items in sorted(
        _by_label(v for v in ours if v.gating and v.category == TestCategory.NEWLY_FAILING).items()
    ):
        names = ", ".join(_short(v.test) for v in items[:NAMED]) + ("…" if len(items) > NAMED else "")
        lines.append(f"  {label}: {len(items)} of {totals[label]} tests of {base} fail on {cand}: {names}")
    vanished: dict[str, list[TestVerdict]] = defaultdict(list)
    for verdict in ours:
        if verdict.gating and verdict.category == TestCategory.INTERFACE:
            vanished[verdict.vanished].append(verdict)
    for name, items in sorted(vanished.items()):
        lines.append(f"  {name} is gone from {cand}: {len(items)} test(s) of {items[0].label} cannot import it")
    lines += [f"  stale review: {entry}" for entry in run.stale_acks]
    lines.append(f"  Gym's own tests report: {run.folder / HTML_FILE}")
    return lines


def _count_table(run: GymTestsRun, side: Side) -> list[str]:
    shown = [c for c in TestCategory if any(v.of == side and v.category == c for v in run.verdicts)]
    if not shown:
        return ["(no tests)"]
    rows = ["| where | " + " | ".join(str(c) for c in shown) + " |", "|---|" + "---|" * len(shown)]
    for label, items in sorted(_by_label(v for v in run.verdicts if v.of == side).items()):
        counts = Counter(v.category for v in items)
        rows.append(f"| {label} | " + " | ".join(str(counts[c] or "") for c in shown) + " |")
    return rows


def markdown(run: GymTestsRun) -> str:
    base, cand = _names(run)
    out = [f"## Gym's own tests ({run.scope}): {base} → {cand}", "", run.verdict, ""]
    if run.why_not:
        return "\n".join(out)
    out += [f"### {base}'s tests: on {base} (the control) and on {cand}", "", *_count_table(run, Side.BASELINE), ""]
    out += [f"### {cand}'s tests: on {cand} (the control) and on {base}", "", *_count_table(run, Side.CANDIDATE), ""]
    for side, category in (
        (Side.BASELINE, TestCategory.NEWLY_FAILING),
        (Side.BASELINE, TestCategory.INTERFACE),
        (Side.BASELINE, TestCategory.UNJUDGED),
        (Side.CANDIDATE, TestCategory.FIXED),
        (Side.BASELINE, TestCategory.EXCLUDED),
        (Side.BASELINE, TestCategory.SAME_FAIL),
        (Side.BASELINE, TestCategory.CANNOT_RUN),
    ):
        items = [v for v in run.verdicts if v.of == side and v.category == category]
        if not items:
            continue
        whose = base if side == Side.BASELINE else cand
        out += [f"### {whose}'s tests: {category} ({len(items)})", "", f"_{MEANINGS[category]}_", ""]
        for verdict in items[:LISTED]:
            review = f" — reviewed: {verdict.ack} ({verdict.ack_file})" if verdict.ack else ""
            out.append(f"- `{verdict.test}` ({verdict.label}): {verdict.why or verdict.other}{review}")
            if verdict.diff and not verdict.ack:
                out += ["", "  ```diff", *(f"  {line}" for line in verdict.diff.splitlines()), "  ```", ""]
        if len(items) > LISTED:
            out.append(f"- … and {len(items) - LISTED} more (gym-tests.json lists every test)")
        out.append("")
    new = Counter(v.vanished for v in run.verdicts if v.category == TestCategory.NEW_INTERFACE)
    if new:
        out += [f"### What {cand}'s tests import that {base} lacks", ""]
        out += [f"- `{name}`: {n} test(s)" for name, n in new.most_common()] + [""]
    return "\n".join(out)


def write(run: GymTestsRun) -> None:
    """gym-tests.md and gym-tests.html beside gym-tests.json."""
    text = markdown(run)
    write_text_atomic(run.folder / MARKDOWN_FILE, text)
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    title = html.escape("Gym's own tests: {} → {}".format(*_names(run)))
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem}"
        "pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}</style></head>"
        f"<body>{body}</body></html>"
    )
    write_text_atomic(run.folder / HTML_FILE, page)
