"""Reviews of Gym's own tests across a bump, in the same ack files as contract changes (compare/acks.py: one file
per ref pair, directed, an entry acknowledges only with a reason).

`[[test]]`: a test of the baseline, as the baseline wrote it (its file's digest), that the candidate no longer
passes: the behaviour it pinned changed on purpose. `[[interface]]`: a module or name the baseline's tests import
that the candidate no longer has, for every test that imports it. A bump with no file of its own is covered by the
reviewed steps chaining its baseline to its candidate: a step's entry covers the same test with the same text (the
same pinned behaviour), or the same vanished name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gymgate.compare import acks as ack_files
from gymgate.gymtests.judge import Side, TestCategory, TestVerdict

TEST, INTERFACE = "test", "interface"


def _covers(entry: dict[str, Any], verdict: TestVerdict) -> bool:
    if verdict.of != Side.BASELINE:
        return False
    if verdict.category == TestCategory.NEWLY_FAILING:
        return entry.get("test") == verdict.test and entry.get("text") == verdict.text
    if verdict.category == TestCategory.INTERFACE:
        return bool(verdict.vanished) and entry.get("vanished") == verdict.vanished
    return False


def _table(verdict: TestVerdict) -> str:
    return INTERFACE if verdict.category == TestCategory.INTERFACE else TEST


def apply(
    reviews: ack_files.Reviews, baseline: dict[str, Any], candidate: dict[str, Any], verdicts: Sequence[TestVerdict]
):
    """Mark every verdict a reviewed entry covers (`ack`, `ack_file`): the pair's own file, then the chains of
    reviewed steps. Returns the entries of the pair's own file that matched nothing judged here (stale)."""
    steps = reviews.steps()
    pair = (baseline.get("digest"), candidate.get("digest"))
    own = [s for s in steps if s.digests == pair]
    routes = ack_files.chains(steps, baseline, candidate)
    used: set[tuple[str, int]] = set()
    for verdict in verdicts:
        if verdict.category not in (TestCategory.NEWLY_FAILING, TestCategory.INTERFACE) or verdict.of != Side.BASELINE:
            continue
        for step in (part for s in [*own, *(s for route in routes for s in route)] for part in s.files):
            entries = step.tables.get(_table(verdict), [])
            index = next((i for i, e in enumerate(entries, 1) if _covers(e, verdict)), None)
            if index is None:
                continue
            used.add((str(step.file), index))
            reason = str(entries[index - 1].get("reason", "")).strip()
            if reason:
                prefix = "" if step in own else f"{step.baseline} → {step.candidate}: "
                verdict.ack = prefix + reason
                verdict.ack_file = f"{ack_files.shown(step.file)} {_table(verdict)} {index}"
                break
    # Stale: an entry about a test this run judged that matched nothing here. Entries about tests outside the run's
    # scope (the core's, another environment's) say nothing either way.
    judged = {v.test for v in verdicts if v.of == Side.BASELINE}
    stale = []
    for step in (part for s in own for part in s.files):
        for table in (TEST, INTERFACE):
            for i, entry in enumerate(step.tables.get(table, []), 1):
                named = {entry.get("test")} if table == TEST else set(entry.get("tests", []))
                if (str(step.file), i) not in used and named & judged:
                    stale.append(
                        f"{ack_files.shown(step.file)} {table} {i} ({entry.get('test') or entry.get('vanished')})"
                    )
    return stale


def draft(directory: Path, baseline: dict[str, Any], candidate: dict[str, Any], verdicts: Sequence[TestVerdict]):
    """Add to the pair's ack file an entry (reason empty) for every unreviewed newly failing test and vanished
    name, with the evidence a reviewer reads: the failure, and how the candidate changed the test's file. Returns
    the file and how many entries were added."""
    path = ack_files.pair_file(directory, baseline, candidate)
    document = ack_files.open_pair(path, baseline, candidate)
    added = 0
    for verdict in verdicts:
        if not verdict.gating:
            continue
        if verdict.category == TestCategory.NEWLY_FAILING:
            if any(_covers(e, verdict) for e in document.get(TEST, [])):
                continue
            changed = verdict.diff or "the candidate's copy of the file is the same"
            entry = {
                "reason": "",
                "test": verdict.test,
                "text": verdict.text,
                "failure": verdict.why,
                "changed": changed,
            }
            ack_files.append_entry(document, TEST, entry)
            added += 1
        else:
            found = next((e for e in document.get(INTERFACE, []) if _covers(e, verdict)), None)
            if found is None:
                entry = {"reason": "", "vanished": verdict.vanished, "error": verdict.why, "tests": []}
                found, added = ack_files.append_entry(document, INTERFACE, entry), added + 1
            if verdict.test not in found["tests"]:
                found["tests"] = sorted([*map(str, found["tests"]), verdict.test])
    ack_files.save_pair(path, document)
    return path, added
