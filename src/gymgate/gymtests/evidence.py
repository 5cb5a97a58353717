"""What a reviewer reads for a newly failing test: the digest of its file as the baseline wrote it (what a review
matches: the same pinned behaviour), and how the candidate changed the test itself (its function's source, diffed;
the whole file's diff when the function cannot be found)."""

from __future__ import annotations

import ast
import difflib
import hashlib
from collections.abc import Sequence
from pathlib import Path

from gymgate.gymtests.judge import Side, TestCategory, TestVerdict

DIFF_LINES = 60


def _function(source: str, nodeid: str) -> str | None:
    """The source of the test a node id names (`file::Class::test[param]`), decorators included, or None."""
    names = [part.split("[", 1)[0] for part in nodeid.split("::")[1:]]
    try:
        body: Sequence[ast.stmt] = ast.parse(source).body
    except SyntaxError:
        return None
    found: ast.stmt | None = None
    for name in names:
        found = next((n for n in body if getattr(n, "name", None) == name), None)
        if found is None:
            return None
        body = getattr(found, "body", [])
    if found is None:
        return None
    first = min([found.lineno, *(d.lineno for d in getattr(found, "decorator_list", []))])
    return "\n".join(source.splitlines()[first - 1 : found.end_lineno])


def _diff(before: str, after: str, name: str) -> str:
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), name, name, lineterm="", n=2))
    cut = f"\n… ({len(lines) - DIFF_LINES} more lines)" if len(lines) > DIFF_LINES else ""
    return "\n".join(lines[:DIFF_LINES]) + cut


def describe(verdict: TestVerdict, baseline_tree: Path, candidate_tree: Path) -> None:
    file = verdict.test.split("::", 1)[0]
    before = (baseline_tree / file).read_text(errors="replace") if (baseline_tree / file).is_file() else ""
    verdict.text = "sha256:" + hashlib.sha256(before.encode()).hexdigest()[:16]
    if not (candidate_tree / file).is_file():
        verdict.diff = "the candidate deleted this file"
        return
    after = (candidate_tree / file).read_text(errors="replace")
    if after == before:
        return  # the same test: the code changed under it
    old, new = _function(before, verdict.test), _function(after, verdict.test)
    if old is not None and new is None:
        verdict.diff = "the candidate deleted this test (its file changed otherwise too)"
    elif old is not None and new is not None:
        verdict.diff = _diff(old, new, verdict.test) or "the test is the same; the rest of its file changed"
    else:
        verdict.diff = _diff(before, after, file)


def evidence(verdicts: Sequence[TestVerdict], baseline_tree: Path, candidate_tree: Path) -> None:
    """Describe every newly failing test of the baseline (`text`, `diff`)."""
    for verdict in verdicts:
        if verdict.category == TestCategory.NEWLY_FAILING and verdict.of == Side.BASELINE:
            describe(verdict, baseline_tree, candidate_tree)
