"""report.html: the comparison as a page a person reads — the verdict as a coloured banner, the count per category,
each path to look at with its failed checks and before/after values side by side, the lock diff as a table, the
rest folded away. One self-contained file (no script, font or stylesheet from the network), readable on a phone.

Rendered from the Comparison with Jinja2 (templates/report.html.j2, autoescaped); computes nothing."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from gymgate.atomic import write_text_atomic
from gymgate.compare.observation import side_by_side, text_diff
from gymgate.compare.runs import Comparison, PathComparison
from gymgate.errors import EXIT_FAILED, EXIT_OK
from gymgate.pathid import PathId
from gymgate.report.fidelity import fidelity_columns
from gymgate.report.grid import BAD, GOOD, WARN, bump_grid, replay_grid
from gymgate.report.grouping import ACKNOWLEDGED, bundle_changes, cause_lines, describe_paths
from gymgate.report.grouping import FAILING as UNREVIEWED
from gymgate.report.markdown import bundle_line, cause_groups, flaky_side_text, ref_label, rl_line, sides
from gymgate.report.next_steps import ack_command, next_steps
from gymgate.report.outputs import RETRY, RETRY_CATEGORIES
from gymgate.report.variants import variant_table
from gymgate.runfolder import RunFolder
from gymgate.verdict import ACTIONABLE, CATEGORIES, CHANGED, FAILING, FLAKY, UNJUDGED

CARDS_OPEN = 30  # path cards shown before the rest are folded (a bump of hundreds of paths stays readable)


def banner(code: int) -> dict[str, str]:
    """The page's banner for a verdict's exit code: its colour class and its word (any code that judged nothing
    reads "cannot judge")."""
    css, word = {EXIT_OK: ("pass", "PASS"), EXIT_FAILED: ("fail", "FAIL")}.get(code, ("error", "CANNOT JUDGE"))
    return {"banner": css, "banner_word": word}


def tone(category: str) -> str:
    """The colour a category is shown in: red fails the gate, amber needs a rerun or a look, green is good news."""
    if category in FAILING:
        return "bad"
    if category in (UNJUDGED, FLAKY):
        return "warn"
    if category in ACTIONABLE:
        return "good"
    return "plain"


@cache
def templates() -> Environment:
    return Environment(
        loader=PackageLoader("gymgate.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _checks(comparison: Comparison, item: PathComparison) -> list[dict[str, str]]:
    """The candidate's failed checks: what the case expects (which the baseline met, when it passed) beside what the
    candidate returned."""
    record = comparison.candidate_records.get(item.path)
    rows = []
    for failure in record.failures if record else []:
        expected, actual = side_by_side(failure.expected, failure.actual)
        rows.append({"kind": failure.kind, "field": failure.field, "expected": expected, "actual": actual})
    return rows


def _lock_rows(comparison: Comparison) -> list[dict[str, str]]:
    locks = comparison.locks
    if locks is None:
        return []
    rows = []
    for kind, found in (("upgraded", locks.upgraded), ("downgraded", locks.downgraded), ("replaced", locks.replaced)):
        rows += [{"name": n, "before": a, "after": b, "kind": kind} for n, (a, b) in found.items()]
    rows += [{"name": n, "before": "—", "after": v, "kind": "added"} for n, v in locks.added.items()]
    rows += [{"name": n, "before": v, "after": "—", "kind": "removed"} for n, v in locks.removed.items()]
    highlighted = set(locks.highlighted)
    for row in rows:
        row["highlighted"] = row["name"] in highlighted
    return sorted(rows, key=lambda r: (not r["highlighted"], r["name"]))


def _bundles(comparison: Comparison) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Changes that move together (report/grouping.py): unacknowledged ones as cards with every field side by side,
    acknowledged ones as lines with their reason."""
    unreviewed, acknowledged = [], []
    universe = [p.path for p in comparison.paths]
    for bundle in bundle_changes(comparison.change_groups(), comparison.profile):
        rows = []
        for group in bundle.groups:
            before, after = side_by_side(group.sample.before, group.sample.after)
            diff = text_diff(group.sample.before, group.sample.after)
            on = bundle.paths_of(group, universe)
            rows.append({"field": group.field, "paths": on, "before": before, "after": after, "diff": diff})
        item = {"line": bundle_line(comparison, bundle), "rows": rows, "ack": bundle.ack, "ack_file": bundle.ack_file}
        if bundle.status == UNREVIEWED:
            unreviewed.append(item)
        elif bundle.status == ACKNOWLEDGED:
            acknowledged.append(item)
    return unreviewed, acknowledged


def _variants(comparison: Comparison) -> dict[str, Any]:
    """The variant table report.md shows (report/variants.variant_table), with both verdicts as indented JSON."""
    table = variant_table(sides(comparison), {p.path: p.category for p in comparison.paths})
    return {
        "labels": table.labels,
        "rows": [{"path": p, "cells": cells, "category": c, "tone": tone(c)} for p, cells, c in table.rows],
        "disagreements": [
            {
                "path": d.path,
                "why": d.why,
                "known": d.known,
                "answers": (d.answers.get("original", ""), d.answers.get("variant", "")),
                "verdicts": (json.dumps(d.original, indent=1), json.dumps(d.variant, indent=1)),
            }
            for d in table.details
        ],
    }


def answer(comparison: Comparison) -> str:
    """The question a maintainer opens the page with — can I bump? — answered in a sentence."""
    groups = comparison.by_category()
    code = comparison.exit_code
    if code == EXIT_OK:
        return "Yes: no path regresses, and every change to what RL receives was reviewed."
    if code == EXIT_FAILED:
        said = [f"{len(groups[c])} {c}" for c in FAILING if groups.get(c)]
        if comparison.lifecycle.get("candidate"):
            said.append("a Gym that did not stop")
        return f"Not yet: {', '.join(said) or 'the candidate fails'}. What to do is below."
    return "Cannot say: nothing could be judged (gymgate's own error, or the machine's). Rerun."


def _gym_tests(comparison: Comparison, out_dir: Path) -> dict[str, str] | None:
    """Gym's own tests' verdict beside the paths' (`accept --gym-tests`), with its page, relative to this one."""
    judged = comparison.gym_tests
    if judged is None:
        return None
    tone = {EXIT_OK: GOOD, EXIT_FAILED: BAD}.get(judged.get("code"), WARN)
    return {"verdict": judged["verdict"], "tone": tone, "page": os.path.relpath(judged["page"], out_dir)}


def _links(comparison: Comparison, item: PathComparison, out_dir: Path) -> dict[str, str]:
    """Where a path's evidence is on the candidate, relative to the page: its record and its environment's log."""
    run = RunFolder(Path(comparison.candidate["dir"]))
    found = {"record": run.record_file(item.path), "log": run.log(PathId(item.path).env)}
    return {name: os.path.relpath(target, out_dir) for name, target in found.items() if target.is_file()}


def _card(comparison: Comparison, item: PathComparison, category: str, out_dir: Path) -> dict[str, Any]:
    return {
        "path": item.path,
        "category": category,
        "tone": tone(category),
        "baseline": item.baseline or "—",
        "candidate": item.candidate or "—",
        "blame": item.blame,
        "reason": item.reason,
        "flaky_on": flaky_side_text(item.flaky_on) if item.flaky_on else "",
        "attempts": {r: [str(o) for o in h] for r, h in item.attempts.items() if len(h) > 1},
        "causes": item.causes,
        "checks": _checks(comparison, item),
        "links": _links(comparison, item, out_dir),
    }


def _cause_cards(comparison: Comparison, out_dir: Path) -> list[dict[str, Any]]:
    """Every path to look at but the changed ones (their changes are shown in bundles), one card per root cause:
    the first path's evidence, the others with the same causes listed under it."""
    groups = comparison.by_category()
    cards: dict[tuple, dict[str, Any]] = {}
    for category in [c for c in ACTIONABLE if c in groups and c != CHANGED]:
        for item in sorted(groups[category], key=lambda i: (not i.nondeterministic_on_candidate, i.path)):
            said = item.reason.splitlines()[0] if item.reason and not item.causes else ""
            key = (category, tuple(item.causes), said)
            if key in cards:
                cards[key]["same"].append(item.path)
            else:
                alike = "with the same cause" if item.causes or said else category
                cards[key] = {**_card(comparison, item, category, out_dir), "same": [], "alike": alike}
    return list(cards.values())


def page_model(comparison: Comparison, out_dir: Path | None = None) -> dict[str, Any]:
    """What the template shows, read off the comparison (`out_dir`: where the page is written, so its links to
    the run folders are relative to it)."""
    out_dir = out_dir or Path(comparison.candidate["dir"])
    groups = comparison.by_category()
    code = comparison.exit_code
    universe = [p.path for p in comparison.paths]
    unreviewed, acknowledged = _bundles(comparison)
    attention = _cause_cards(comparison, out_dir)
    return {
        **banner(code),
        "answer": answer(comparison),
        "gym_tests": _gym_tests(comparison, out_dir),
        "next": [{"why": s.why, "command": s.command} for s in next_steps(comparison, out_dir) if not s.to_report],
        "grid": bump_grid(comparison),
        "replay_grid": replay_grid(
            comparison, (comparison.baseline.get("name", "baseline"), comparison.candidate.get("name", "candidate"))
        ),
        "retry": RETRY if any(p.category in RETRY_CATEGORIES for p in comparison.paths) else "",
        "ack_command": ack_command(comparison),
        "verdict": comparison.verdict,
        "rl": rl_line(comparison.profile, comparison.recipe),
        "exit_code": code,
        "baseline": ref_label(comparison.baseline),
        "candidate": ref_label(comparison.candidate),
        "broken": {
            r: why
            for r, why in (("baseline", comparison.baseline_broken), ("candidate", comparison.candidate_broken))
            if why
        },
        "lifecycle": {role: problems for role, problems in comparison.lifecycle.items() if problems},
        "categories": [{"name": c, "count": len(groups[c]), "tone": tone(c)} for c in CATEGORIES if c in groups],
        "total": len(comparison.paths),
        "causes": [
            {"text": line.text(universe), "paths": [i.path for i in line.paths]}
            for line in cause_lines(cause_groups(comparison.paths))
        ],
        "changes": unreviewed,
        "changed_paths": describe_paths([p.path for p in groups.get(CHANGED, [])], universe),
        "changed_count": len(groups.get(CHANGED, [])),
        "attention": attention[:CARDS_OPEN],
        "attention_more": attention[CARDS_OPEN:],
        "locks": _lock_rows(comparison),
        "locks_compared": comparison.locks is not None,
        "acked": acknowledged,
        "paths": [
            {
                "path": p.path,
                "category": p.category,
                "tone": tone(p.category),
                "baseline": p.baseline or "—",
                "candidate": p.candidate or "—",
            }
            for p in comparison.paths
        ],
        "fidelity": fidelity_columns(sides(comparison)),
        "variants": _variants(comparison),
        "refused": [a.where for a in comparison.acks.refused],
        "stale": [a.where for a in comparison.acks.stale],
    }


def render_html(comparison: Comparison, out_dir: Path | None = None) -> str:
    return templates().get_template("report.html.j2").render(**page_model(comparison, out_dir))


def write_html(comparison: Comparison, directory: Path, name: str) -> Path:
    return write_text_atomic(directory / name, render_html(comparison, directory))
