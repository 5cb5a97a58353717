"""What a bump did to each of Gym's own tests, decided from its runs on its own release (the control) and on the
other release.

A test of the baseline that passes on the baseline and not on the candidate is *newly failing*: the candidate breaks
a behaviour the baseline's authors pinned. A test of the candidate that passes on the candidate and not on the
baseline is *fixed*: a behaviour the candidate's authors pinned that the baseline did not do. A test file that
collects on its own release and cannot be imported on the other (a module or a name it imports is gone) is an
interface change, grouped by what vanished. Tests that cannot run here (skipped, a module this environment lacks,
the network) or that fail or flake on their own release are excluded, each with its reason, and counted.

Fails closed: a test of the baseline the candidate fails even once (where every control run passed), leaves no
record of, or no longer collects, is newly failing; a test whose root did not finish on either side is unjudged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from gymgate.gymtests.execute import ABSENT, FAILED, FINISHED, HUNG, NO_TESTS, PASSED, SKIPPED, RootRun, TestRun


class Side(StrEnum):
    """Whose tests: the baseline's (what it pinned, held against the candidate) or the candidate's."""

    BASELINE = "baseline"
    CANDIDATE = "candidate"


class TestCategory(StrEnum):
    __test__ = False  # not a test class (pytest collects names starting with Test)

    NEWLY_FAILING = "newly failing"
    INTERFACE = "cannot import"
    UNJUDGED = "unjudged"
    FIXED = "fixed"
    NEW_INTERFACE = "new interface"
    PASS_BOTH = "pass on both"
    SAME_FAIL = "same-fail"
    EXCLUDED = "excluded"
    CANNOT_RUN = "cannot run here"


MEANINGS: dict[TestCategory, str] = {
    TestCategory.NEWLY_FAILING: "a test of the baseline that passes there (every control run) and fails, hangs, "
    "or no longer collects on the candidate (or fails there even once). Fails the gate until reviewed.",
    TestCategory.INTERFACE: "a test file of the baseline that cannot be imported on the candidate: a module or name "
    "it imports is gone (grouped by what vanished). Fails the gate until reviewed.",
    TestCategory.UNJUDGED: "its root's pytest did not finish on one side (a crash, past its bound): says nothing "
    "about Gym. Exit 3: rerun.",
    TestCategory.FIXED: "a test of the candidate that passes there and fails on the baseline: what the candidate's "
    "authors pinned that the baseline did not do.",
    TestCategory.NEW_INTERFACE: "a test file of the candidate that cannot be imported on the baseline: it imports "
    "what the candidate added.",
    TestCategory.PASS_BOTH: "passes on its own release and on the other.",
    TestCategory.SAME_FAIL: "fails on its own release every time and on the other too.",
    TestCategory.EXCLUDED: "fails or flakes on its own release (its control runs): not evidence about the bump.",
    TestCategory.CANNOT_RUN: "cannot run here: skipped on its own release, needs a module this environment lacks, "
    "or the network or a service (decided on the control run).",
}
GATING = (TestCategory.NEWLY_FAILING, TestCategory.INTERFACE)  # exit 1 unless reviewed
SHOWN = (
    TestCategory.NEWLY_FAILING,
    TestCategory.INTERFACE,
    TestCategory.UNJUDGED,
    TestCategory.FIXED,
    TestCategory.NEW_INTERFACE,
)

_MISSING = [
    (re.compile(r"No module named '([^']+)'"), "{0}"),
    (re.compile(r"cannot import name '([^']+)' from '([^']+)'"), "{1}.{0}"),
    (re.compile(r"module '([^']+)' has no attribute '([^']+)'"), "{0}.{1}"),
]
_NETWORK = re.compile(
    r"ProxyError|ConnectionRefused|Connection refused|ConnectError|Name or service not known|"
    r"Temporary failure in name resolution|Network is unreachable|OfflineModeIsEnabled|"
    r"LocalEntryNotFoundError|outgoing traffic has been disabled",
    re.I,
)


def vanished(message: str) -> str | None:
    """The module or name an import error says is missing (`pkg.mod.Name`), or None for any other error."""
    for pattern, shape in _MISSING:
        found = pattern.search(message)
        if found:
            return shape.format(*found.groups())
    return None


@dataclass
class Observed:
    """One test's runs on one side, in order (several when it was confirmed)."""

    runs: list[TestRun] = field(default_factory=list)

    @property
    def outcomes(self) -> set[str]:
        return {r.outcome for r in self.runs}

    def summary(self) -> str:
        if not self.runs:
            return "no record"
        failed = [r for r in self.runs if r.outcome in (FAILED, HUNG)]
        if len(self.runs) == 1:
            return self.runs[0].outcome
        return f"{len(self.runs) - len(failed)} of {len(self.runs)} passed"

    def failure(self) -> str:
        return next((r.message for r in self.runs if r.outcome in (FAILED, HUNG)), "")


@dataclass
class TestVerdict:
    __test__ = False  # not a test class

    test: str
    label: str  # the root's label: environment(s), agent, model, core
    of: Side
    category: TestCategory
    why: str = ""  # the failure, the skip, what vanished
    own: str = ""
    other: str = ""
    vanished: str = ""
    text: str = ""  # a newly failing test's file as its release wrote it (a digest: what a review matches)
    diff: str = ""  # how the other release changed that file (what a reviewer reads)
    ack: str = ""  # the reviewed reason that covers it (gymtests.acks)
    ack_file: str = ""

    @property
    def gating(self) -> bool:
        return self.category in GATING and not self.ack

    def to_json(self) -> dict:
        data = {
            "test": self.test,
            "label": self.label,
            "of": str(self.of),
            "category": str(self.category),
            "why": self.why,
            "own": self.own,
            "other": self.other,
        }
        optional = ("vanished", "text", "diff", "ack", "ack_file")
        data.update({k: getattr(self, k) for k in optional if getattr(self, k)})
        return data

    @classmethod
    def from_json(cls, data: dict) -> TestVerdict:
        return cls(**{**data, "of": Side(data["of"]), "category": TestCategory(data["category"])})


@dataclass
class SideRuns:
    """Every run of one suite (a side's tests on one release), by root path: the first run and its confirmations."""

    runs: dict[str, list[RootRun]] = field(default_factory=dict)

    def add(self, results: Sequence[RootRun]) -> None:
        for result in results:
            self.runs.setdefault(result.root.path, []).append(result)

    def observed(self, root: str, test: str) -> Observed:
        return Observed([r.tests[test] for r in self.runs.get(root, []) if test in r.tests])

    def uncollected(self, root: str, test: str) -> str | None:
        """Why `test`'s file could not be collected in the first run, or None."""
        first = self.runs.get(root, [])
        file = test.split("::", 1)[0]
        return first[0].uncollected.get(file) if first else None

    def status(self, root: str) -> str:
        first = self.runs.get(root, [])
        return first[0].status if first else "did not run"

    def tests(self, root: str) -> list[str]:
        first = self.runs.get(root, [])
        return sorted(first[0].tests) if first else []


def _cannot_run(own: Observed) -> str | None:
    if own.outcomes == {SKIPPED}:
        return own.runs[0].message or "skipped"
    message = own.failure()
    if own.outcomes <= {FAILED} and _NETWORK.search(message):
        return f"needs the network or a service: {message}"
    return None


def judge_test(
    test: str, label: str, of: Side, own: Observed, other: Observed, other_uncollected: str | None, other_status: str
) -> TestVerdict:
    """One test's category (module docstring); `own` is its runs on its own release, `other` on the other."""
    verdict = TestVerdict(test, label, of, TestCategory.PASS_BOTH, own=own.summary(), other=other.summary())
    forward = of == Side.BASELINE
    why_not = _cannot_run(own)
    if why_not is not None:
        verdict.category, verdict.why = TestCategory.CANNOT_RUN, why_not
    elif own.outcomes != {PASSED}:
        flaky = PASSED in own.outcomes
        same = not flaky and bool(other.runs) and PASSED not in other.outcomes
        verdict.category = TestCategory.SAME_FAIL if same else TestCategory.EXCLUDED
        verdict.why = ("flaky" if flaky else "fails") + f" on its own release: {own.failure()}"
    elif other_uncollected is not None and (gone := vanished(other_uncollected)):
        verdict.category = TestCategory.INTERFACE if forward else TestCategory.NEW_INTERFACE
        verdict.vanished, verdict.why = gone, other_uncollected
    elif other_uncollected is not None:
        verdict.category = TestCategory.NEWLY_FAILING if forward else TestCategory.FIXED
        verdict.why = f"its file does not collect: {other_uncollected}"
    elif other_status == ABSENT:
        verdict.category = TestCategory.NEWLY_FAILING if forward else TestCategory.FIXED
        verdict.why = "its server is not in the other release"
    elif not other.runs:
        if other_status != FINISHED:
            verdict.category, verdict.why = TestCategory.UNJUDGED, "its root did not finish on the other release"
        else:
            verdict.category = TestCategory.NEWLY_FAILING if forward else TestCategory.FIXED
            verdict.why = "not collected on the other release (its file collects; its parameters changed?)"
    elif other.outcomes == {SKIPPED}:
        verdict.category = TestCategory.NEWLY_FAILING if forward else TestCategory.FIXED
        verdict.why = f"skipped on the other release: {other.runs[0].message}"
    elif other.outcomes != {PASSED}:
        verdict.category = TestCategory.NEWLY_FAILING if forward else TestCategory.FIXED
        verdict.why = other.failure() or f"{other.summary()} on the other release"
    return verdict


def judge_side(of: Side, own: SideRuns, other: SideRuns, labels: dict[str, str]) -> list[TestVerdict]:
    """Every test of one side's suite. A test file that does not collect on its own release is one row (its tests
    are unknown): cannot run here when it lacks a module, else excluded."""
    verdicts: list[TestVerdict] = []
    for root, label in labels.items():
        status = own.status(root)
        if status in (NO_TESTS, ABSENT):
            continue  # nothing of this root to judge on this side
        if status != FINISHED and not own.tests(root):
            verdicts.append(TestVerdict(root or "tests", label, of, TestCategory.UNJUDGED, why=status))
            continue
        for test in own.tests(root):
            verdicts.append(
                judge_test(
                    test,
                    label,
                    of,
                    own.observed(root, test),
                    other.observed(root, test),
                    other.uncollected(root, test),
                    other.status(root),
                )
            )
        first = own.runs[root][0]
        for file, why in sorted(first.uncollected.items()):
            missing = vanished(why)
            category = TestCategory.CANNOT_RUN if missing else TestCategory.EXCLUDED
            reason = f"needs {missing}, not in this environment" if missing else f"does not collect: {why}"
            verdicts.append(TestVerdict(file, label, of, category, why=reason, own="not collected"))
    return verdicts


def to_confirm(verdicts: Sequence[TestVerdict]) -> list[TestVerdict]:
    """The tests whose category rests on one run of each side: run both sides again before they are reported."""
    return [
        v
        for v in verdicts
        if v.category in (TestCategory.NEWLY_FAILING, TestCategory.FIXED, TestCategory.EXCLUDED)
        and "::" in v.test
        and "does not collect" not in v.why
    ]
