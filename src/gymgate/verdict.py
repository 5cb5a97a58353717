"""Where every verdict is decided: a path's category in a comparison, a comparison's exit code and verdict line, a
run judged alone, a matrix, a bisected commit. Renderers (report/, ci/) show what is decided here; they decide
nothing.

The one table from a path's outcomes on the baseline and the candidate to a comparison category.

A record is first reduced to a *label*: PASS, FAIL, ERROR (blamed on Gym), ERROR(harness) (gymgate's own fault:
it says nothing about Gym), NO_RECORD (an expected path that left no record), SKIP (not in that Gym), BROKEN (the
ref could not be locked, built or started at all), or None (the run was not asked for that path).

The table fails closed: a path that passes on the baseline and fails, errors, left no record or is absent (its
environment's config or data gone) on the candidate is regressed. Harness errors are not evidence either way: a
side whose every attempt is a harness error makes the path unjudged (exit 3, rerun). A side is flaky only when some
attempt passed and some did not; a side that never passed is judged by its first informative attempt, whatever mix
of FAIL / ERROR / BROKEN / no record its attempts show (a path that never passes is never flaky, and never exit 0).
A candidate whose attempts disagree (flaky, or nondeterministic: compare/stability.py) where the baseline's agree is
regressed; a baseline that disagrees with itself makes the path flaky (named, exit 0).

A path that passes on both refs is "same-pass" unless the bump changed what its model received or what RL trains
on (a contract change, compare/observation.py) and no reviewed acknowledgement covers it: then it is "changed",
which fails the gate like a regression (compare/runs.py decides it from the two observations).

Exit codes, everywhere: 0 clean, 1 a regression or failure (a category in FAILING, a Gym that did not stop, a ref
whose attempts disagree), 3 nothing could be judged (UNJUDGED, a BROKEN baseline, a session that did not finish).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from packaging.version import InvalidVersion, Version

from gymgate.errors import EXIT_FAILED, EXIT_OK, EXIT_UNJUDGED, JUDGED
from gymgate.outcomes import BROKEN, ERROR, FAIL, HARNESS, PASS, SKIP
from gymgate.runfolder import FINISHED_STATUSES, PathRecord

# compare/ asks this module for categories; this module never imports compare/. What it reads of a comparison is
# declared here as protocols (compare.runs.Comparison and PathComparison satisfy them).


class JudgedChange(Protocol):
    ack: str


class JudgedPath(Protocol):
    path: str
    candidate: str | None
    category: str
    causes: list[str]
    changes: Sequence[JudgedChange]

    @property
    def nondeterministic_on_candidate(self) -> bool: ...

    @property
    def additive_only(self) -> bool: ...


class JudgedBump(Protocol):
    baseline: dict[str, Any]  # each ref's source: name, version, …
    candidate: dict[str, Any]
    paths: Sequence[JudgedPath]
    baseline_broken: str
    candidate_broken: str
    lifecycle: dict[str, list[str]]

    def by_category(self) -> dict[str, list[Any]]: ...

    @property
    def changed(self) -> Sequence[Any]: ...


class Category(StrEnum):
    """What a bump did to one path: the baseline's outcome against the candidate's (decided below)."""

    REGRESSED = "regressed"
    BROKEN = "broken"
    CHANGED = "changed"
    UNJUDGED = "unjudged"
    FLAKY = "flaky"
    FIXED = "fixed"
    NEW_PATH = "new path"
    REMOVED_PATH = "removed path"
    SAME_FAIL = "same-fail"
    SAME_PASS = "same-pass"
    SKIPPED = "skipped"


# What each category means to the maintainer reading a verdict (reports, --help and the docs' reference read it).
MEANINGS: dict[Category, str] = {
    Category.REGRESSED: "passed on the baseline; on the candidate it fails, errs, left no record, disagrees with "
    "itself, or its environment is gone. Fails the gate.",
    Category.BROKEN: "either ref could not be locked, built or started, so the path could not run. Fails the gate "
    "(a broken baseline: nothing can be judged).",
    Category.CHANGED: "passes on both, but what the model received or what RL trains on changed (a contract "
    "change) and no reviewed acknowledgement covers it. Fails the gate until reviewed (`gymgate ack`).",
    Category.UNJUDGED: "gymgate's own error on a side (its Ray, its endpoint, a worker crash with no Gym cause), "
    "or a path only one run was asked for: says nothing about Gym. Exit 3: rerun.",
    Category.FLAKY: "its attempts on the baseline disagreed (some passed, some did not): named, not failing. A "
    "candidate that disagrees with itself where the baseline agrees is regressed instead.",
    Category.FIXED: "failed on the baseline, passes on the candidate.",
    Category.NEW_PATH: "passes on the candidate; its environment is not in the baseline's Gym.",
    Category.REMOVED_PATH: "failing on the baseline, its environment gone from the candidate.",
    Category.SAME_FAIL: "fails or errs on both refs: the bump does not change it (a known Gym defect, shown with "
    "its cause).",
    Category.SAME_PASS: "passes on both, nothing RL reads changed (or every change is acknowledged).",
    Category.SKIPPED: "its environment is in neither ref's Gym.",
}


class BisectVerdict(StrEnum):
    """What one commit of a bisection was judged."""

    GOOD = "good"  # every chosen path as on the good ref
    BAD = "bad"  # a chosen path regresses, breaks or changes unacknowledged
    SKIP = "skip"  # cannot be built or started: bisection goes around it
    FLAKY = "flaky"  # its attempts disagreed: skipped too
    UNSURE = "unsure"  # an ERROR or an unjudged path: rerun in fresh Gyms


HARNESS_ERROR = "ERROR(harness)"
NO_RECORD = "NO_RECORD"
LABELS = (PASS, FAIL, ERROR, HARNESS_ERROR, NO_RECORD, SKIP, BROKEN, None)

REGRESSED, BROKEN_CATEGORY, CHANGED, UNJUDGED = Category.REGRESSED, Category.BROKEN, Category.CHANGED, Category.UNJUDGED
FLAKY, FIXED, NEW_PATH, REMOVED_PATH = Category.FLAKY, Category.FIXED, Category.NEW_PATH, Category.REMOVED_PATH
SAME_FAIL, SAME_PASS, SKIPPED = Category.SAME_FAIL, Category.SAME_PASS, Category.SKIPPED
CATEGORIES = tuple(Category)  # in the order reports list them
# Categories a reviewer must look at; the "same" buckets are collapsed in reports.
ACTIONABLE = (REGRESSED, BROKEN_CATEGORY, CHANGED, UNJUDGED, FLAKY, FIXED, NEW_PATH, REMOVED_PATH)
FAILING = (REGRESSED, BROKEN_CATEGORY, CHANGED)  # exit 1
CANNOT_JUDGE = (UNJUDGED,)  # exit 3 unless something failed

_ROW_PASS = {
    PASS: SAME_PASS,
    FAIL: REGRESSED,
    ERROR: REGRESSED,
    HARNESS_ERROR: UNJUDGED,
    NO_RECORD: REGRESSED,
    SKIP: REGRESSED,  # the environment's config or data is gone: an RL framework training on it breaks
    BROKEN: BROKEN_CATEGORY,
    None: UNJUDGED,
}
_ROW_FAILING = {
    PASS: FIXED,
    FAIL: SAME_FAIL,
    ERROR: SAME_FAIL,
    HARNESS_ERROR: UNJUDGED,
    NO_RECORD: SAME_FAIL,
    SKIP: REMOVED_PATH,
    BROKEN: BROKEN_CATEGORY,
    None: UNJUDGED,
}
_ROW_ABSENT = {
    PASS: NEW_PATH,
    FAIL: REGRESSED,
    ERROR: REGRESSED,
    HARNESS_ERROR: UNJUDGED,
    NO_RECORD: REGRESSED,
    SKIP: SKIPPED,
    BROKEN: BROKEN_CATEGORY,
    None: SKIPPED,
}
#  baseline label -> candidate label -> category
TABLE: dict[str | None, dict[str | None, Category]] = {
    PASS: _ROW_PASS,
    FAIL: _ROW_FAILING,
    ERROR: _ROW_FAILING,
    HARNESS_ERROR: {c: (BROKEN_CATEGORY if c == BROKEN else UNJUDGED) for c in LABELS},
    NO_RECORD: {c: (BROKEN_CATEGORY if c == BROKEN else UNJUDGED) for c in LABELS},
    SKIP: _ROW_ABSENT,
    BROKEN: {c: (FIXED if c == PASS else BROKEN_CATEGORY) for c in LABELS},
    None: _ROW_ABSENT,
}


def known_defect(record: PathRecord) -> bool:
    """A variant that disagrees with its original as a reviewed entry says this Gym does (gymgate.variants.known):
    it passes its run judged alone, and is a disagreement (FAIL) to every comparison."""
    found = record.section("variant")
    return record.outcome == PASS and found.get("agrees") is False and bool(found.get("known"))


def label(record: PathRecord | None) -> str | None:
    """What one record says about Gym, as the table reads it."""
    if record is None:
        return None
    outcome = record.outcome
    if record.missing:
        return NO_RECORD
    if known_defect(record):
        return FAIL
    if outcome == ERROR and record.blame == HARNESS:
        return HARNESS_ERROR
    if outcome in (PASS, FAIL, ERROR, SKIP, BROKEN):
        return outcome
    return ERROR  # an outcome this version does not know is never a pass


def informative(history: list[str | None]) -> list[str | None]:
    """The attempts that say something about Gym: harness errors are dropped (unless nothing else is left)."""
    kept = [h for h in history if h != HARNESS_ERROR]
    return kept or history


def mixed(history: list[str | None]) -> bool:
    """Some informative attempt passed and some did not: flaky. Attempts that disagree only on how they failed
    (a FAIL, then an ERROR) are not flaky: the path never passed."""
    kept = set(informative(history))
    return PASS in kept and len(kept) > 1


def categorize(
    baseline: str | None,
    candidate: str | None,
    attempts: list[str | None] | None = None,
    baseline_attempts: list[str | None] | None = None,
    unstable: tuple[bool, bool] = (False, False),
    changed: bool = False,
) -> Category:
    """The category of one path from its labels. `attempts` / `baseline_attempts` are each side's labels over all
    its attempts (the first included); `unstable` says whether each side's attempts disagreed (baseline, candidate;
    compare/stability.py: flaky or nondeterministic — mixed labels count as unstable here too).
    A candidate that disagrees with itself where the baseline did not is regressed: the bump made the path
    unreliable for whoever trains on it. A baseline that disagrees with itself makes the path flaky (named, exit 0):
    the bump did not cause it. `changed`: the candidate passes with an unacknowledged contract change (what the
    model received or what RL trains on differs from the baseline and no review covers it); a path that would be
    same-pass is then changed, which fails the gate like a regression."""
    base_unstable = unstable[0] or mixed(baseline_attempts or [baseline])
    cand_unstable = unstable[1] or mixed(attempts or [candidate])
    if cand_unstable and not base_unstable:
        return REGRESSED
    if base_unstable:
        return FLAKY
    sides = [
        informative(history or [first])[0] for first, history in ((baseline, baseline_attempts), (candidate, attempts))
    ]
    try:
        category = TABLE[sides[0]][sides[1]]
    except KeyError:
        raise ValueError(f"not a label pair: {sides[0]!r} -> {sides[1]!r}") from None
    return CHANGED if changed and category == SAME_PASS else category


def flaky_side(baseline_unstable: bool, candidate_unstable: bool) -> str:
    """Which ref of a flaky path disagreed with itself: "baseline" or "both" (the candidate alone is regressed)."""
    return "both" if baseline_unstable and candidate_unstable else "baseline"


def comparison_exit(comparison: JudgedBump) -> int:
    """A bump's exit code."""
    if comparison.baseline_broken:
        return EXIT_UNJUDGED  # nothing can be judged against a baseline that does not work
    if any(p.category in FAILING for p in comparison.paths) or comparison.lifecycle.get("candidate"):
        return EXIT_FAILED
    if any(p.category in CANNOT_JUDGE for p in comparison.paths):
        return EXIT_UNJUDGED  # gymgate's own fault on one side: rerun
    return EXIT_OK


def downgrade(baseline: dict[str, Any], candidate: dict[str, Any]) -> bool:
    """The candidate's nemo-gym is older than the baseline's: what the newer release added reads as removed, and
    no review of the upgrade covers its reverse (acknowledgements are directed)."""
    try:
        return Version(str(candidate.get("version"))) < Version(str(baseline.get("version")))
    except InvalidVersion:
        return False


def comparison_verdict(comparison: JudgedBump) -> str:
    """A bump's verdict line: never silent, it names what needs a reader (a downgrade, then the candidate's new
    nondeterminism)."""
    line = _verdict_line(comparison)
    if downgrade(comparison.baseline, comparison.candidate):
        old, new = comparison.baseline.get("name", "baseline"), comparison.candidate.get("name", "candidate")
        return f"downgrade {old} → {new}: {line}"
    return line


def _verdict_line(comparison: JudgedBump) -> str:
    groups = comparison.by_category()
    if comparison.baseline_broken:
        return f"cannot judge: the baseline is BROKEN ({comparison.baseline_broken.splitlines()[0][:200]})"
    if comparison.candidate_broken:
        return f"candidate BROKEN: {comparison.candidate_broken.splitlines()[0][:200]}"
    flaky = groups.get(FLAKY, [])
    unreliable = [p for p in comparison.paths if p.nondeterministic_on_candidate]
    noted = f", {len(unreliable)} nondeterministic on the candidate" if unreliable else ""
    noted += f", {len(flaky)} flaky" if flaky else ""
    noted += f", {len(groups[REMOVED_PATH])} removed" if groups.get(REMOVED_PATH) else ""
    if comparison.lifecycle.get("candidate"):
        noted += f", lifecycle check failed ({len(comparison.lifecycle['candidate'])} Gym stop problem(s))"
    code = comparison_exit(comparison)
    if code == EXIT_OK:
        return f"no regression ({_passing_counts(comparison, len(groups.get(SAME_PASS, [])))}{noted})"
    unjudged = len(groups.get(UNJUDGED, []))
    if code == EXIT_UNJUDGED:
        return f"cannot judge: {unjudged} path(s) unjudged (gymgate's own error; rerun){noted}"
    judged = f"{len(groups.get(REGRESSED, []))} regressed, {len(groups.get(BROKEN_CATEGORY, []))} broken"
    if groups.get(CHANGED):
        judged += f", {len(groups[CHANGED])} changed (unacknowledged contract changes)"
    return judged + (f", {unjudged} unjudged" if unjudged else "") + noted


def _passing_counts(comparison: JudgedBump, same: int) -> str:
    """How the paths that pass on both refs changed, each kind of change counted apart: a reviewed contract change,
    and a key Gym's result only adds (nothing to review), so neither reads as changes left unreviewed."""
    reviewed = sum(1 for p in comparison.changed if any(c.ack for c in p.changes))
    additive = sum(1 for p in comparison.changed if p.additive_only)
    parts = [f"{n} {what}" for n, what in ((reviewed, "with reviewed changes"), (additive, "only adding keys")) if n]
    return f"{same} paths pass on both" + (f": {', '.join(parts)}" if parts else "")


RUN_VERDICTS = {EXIT_OK: "clean", EXIT_FAILED: "failures found", EXIT_UNJUDGED: "could not judge"}


def run_exit(
    records: Sequence[PathRecord], pytest_code: int, lifecycle: Sequence[str] = (), unstable: bool = False
) -> int:
    """A ref judged alone: 0 every path passed or was skipped; 1 a path failed or errored, a path's attempts
    disagreed with each other (`unstable`), or a Gym did not stop within its bound; 3 the run could not judge
    anything (or its test session did not finish)."""
    if not records or pytest_code not in FINISHED_STATUSES:
        return EXIT_UNJUDGED  # nothing judged, or the test session itself did not finish
    if any(r.outcome not in (PASS, SKIP) for r in records) or lifecycle or unstable or pytest_code == 1:
        return EXIT_FAILED
    return EXIT_OK


@dataclass(frozen=True)
class RunVerdict:
    """A ref judged alone, with what decided it (what the terminal summary and the --json document show)."""

    code: int
    records: list[PathRecord]  # the expected paths' records
    lifecycle: list[str]  # what did not stop within its bound
    disagreements: dict[str, str]  # path -> how its attempts disagreed

    @property
    def label(self) -> str:
        return RUN_VERDICTS.get(self.code, RUN_VERDICTS[EXIT_UNJUDGED])


def run_verdict(
    records: list[PathRecord], pytest_code: int, lifecycle: list[str], disagreements: dict[str, str]
) -> RunVerdict:
    """A ref judged alone, from its records and how each path's attempts disagreed (compare/alone.py reads them)."""
    return RunVerdict(run_exit(records, pytest_code, lifecycle, bool(disagreements)), records, lifecycle, disagreements)


def unjudgeable(role: str, name: str, code: int, broken: str) -> str:
    """Why a bump cannot be judged on this side's run, or "" when it can: a baseline must be a judged run (clean
    or failing) and not BROKEN; a candidate must be judged, and BROKEN is itself its finding."""
    if role == "baseline" and (broken or code not in JUDGED):
        return f"the baseline {name}: " + (
            f"it is BROKEN ({broken.splitlines()[0]})" if broken else "it could not be judged"
        )
    if role == "candidate" and code not in JUDGED and not broken:
        return f"the candidate {name} could not be judged"
    return ""


def matrix_exit(last_bump: JudgedBump | None, runs: Sequence[tuple[int, bool]]) -> int:
    """The matrix's exit: the last bump's verdict (0 clean, 1 regression or unreviewed change, 3 cannot judge);
    with one ref, that ref's own (`runs`: each ref's (exit code, broken); a BROKEN or failing ref is 1, as
    `accept --no-baseline` says)."""
    if last_bump is not None:
        return comparison_exit(last_bump)
    if any(broken or code == EXIT_FAILED for code, broken in runs):
        return EXIT_FAILED
    return EXIT_UNJUDGED if any(code not in JUDGED for code, _ in runs) else EXIT_OK


def commit_verdict(comparison: JudgedBump, paths: list[str]) -> tuple[BisectVerdict, str]:
    """A bisected commit's run judged against the good ref's run: (good | bad | skip | unsure, why)."""
    if comparison.candidate_broken:
        return BisectVerdict.SKIP, comparison.candidate_broken.splitlines()[0]
    by_path = {p.path: p for p in comparison.paths}
    failing = [p for p in paths if by_path[p].category in FAILING]
    unsure = [
        p for p in paths if by_path[p].candidate == ERROR or by_path[p].category not in (*FAILING, SAME_PASS, FIXED)
    ]
    if unsure:
        why = ", ".join(f"{p}: {by_path[p].candidate} ({by_path[p].category})" for p in unsure)
        return BisectVerdict.UNSURE, why
    if failing:
        why = ", ".join(f"{p}: {by_path[p].category} {'; '.join(by_path[p].causes)[:200]}" for p in failing)
        return BisectVerdict.BAD, why
    return BisectVerdict.GOOD, "every chosen path as on the good ref"


def bisect_exit(first_bad_paths: list[str]) -> int:
    """1 when a first bad commit (or its suspects) was found for the chosen paths, 0 when nothing regresses."""
    return EXIT_FAILED if first_bad_paths else EXIT_OK


class LoadCategory(StrEnum):
    """What a load metric's change between baseline and candidate comes to (gymgate.load.judge), as mature perf gates
    name them (pytorch's benchmark regression reports)."""

    REGRESSION = "regression"  # beyond its threshold, and the confidence interval excludes the threshold
    SUSPICIOUS = "suspicious"  # beyond its threshold, but not significantly (after the extra rounds): shown, not failed
    NO_CHANGE = "no change"
    INSUFFICIENT = "insufficient data"  # too few rounds ran to judge: never a pass
    IMPROVED = "improved"  # significantly better
    ACKNOWLEDGED = "acknowledged"  # a regression a reviewed `[[load]]` entry accepts, within its bound (shown)


class LoadCorrectness(StrEnum):
    """What concurrency did to an environment's rollouts on each ref (each rollout held to its path alone)."""

    # the candidate loses, fails or changes rollouts at a lower level than the baseline (or where it does not)
    REGRESSED = "regressed under load"
    SAME_FAIL = "same-fail under load"  # both refs do, from the same level: not the bump's doing (shown)
    FIXED = "fixed under load"
    HOLDS = "holds under load"


def load_exit_code(categories: Sequence[str]) -> int:
    """A load verdict's exit code: 1 for any regression (of cost, or correctness under load), else 2 when something
    could not be judged, else 0. Suspicious changes and same-fails are shown, and do not fail the gate."""
    if any(c in (LoadCategory.REGRESSION, LoadCorrectness.REGRESSED) for c in categories):
        return EXIT_FAILED
    if LoadCategory.INSUFFICIENT in categories:
        return EXIT_UNJUDGED
    return EXIT_OK


def combined_exit(code: int, other: int) -> int:
    """Two verdicts of one command (a bump and its load run, or Gym's own tests): a failure either way fails (1),
    else the graver of the two."""
    return EXIT_FAILED if EXIT_FAILED in (code, other) else max(code, other)
