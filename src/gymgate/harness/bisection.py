"""What every bisection shares, whatever it bisects (a path: harness/bisect.py; a metric under load:
harness/load_bisect.py; one of Gym's own tests: harness/gym_test_bisect.py): the verdicts of a step, how often an
unsure commit is tried, the pair of refs it walks between, the search over first-parent history, skipping as git
bisect does, and a bisection by a predicate of one commit (`bisect_by`) with its report."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gymgate.atomic import write_text_atomic
from gymgate.errors import UsageError
from gymgate.refs import git
from gymgate.refs.resolve import resolve_ref
from gymgate.refs.source import KIND_GIT, GymSource
from gymgate.results import Step
from gymgate.verdict import BisectVerdict

GOOD, BAD, SKIP, FLAKY, UNSURE = (
    BisectVerdict.GOOD,
    BisectVerdict.BAD,
    BisectVerdict.SKIP,
    BisectVerdict.FLAKY,
    BisectVerdict.UNSURE,
)
ATTEMPTS = 3  # at most this many runs of one unsure commit


def resolve_pair(good: str, bad: str, repo: str | None) -> tuple[GymSource, GymSource]:
    found = resolve_ref(good, repo), resolve_ref(bad, repo)
    for asked, source in zip((good, bad), found, strict=True):
        if source.kind != KIND_GIT:
            raise UsageError(f"bisect walks git history: {asked!r} is a {source.kind} ref, not a commit, tag or branch")
    if found[0].origin != found[1].origin:
        raise UsageError(f"--good and --bad must come from one repository ({found[0].origin} vs {found[1].origin})")
    return found


def search(commits: list[str], judge) -> tuple[int, int, list[Step], set[int]]:
    """Binary search over `commits` (index -1 is the good ref, the last is bad) with skipping, as git bisect does.
    Returns (last good index, first bad index, steps, skipped indices)."""
    lo, hi = -1, len(commits) - 1
    skipped: set[int] = set()
    steps: list[Step] = []
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in skipped]
        if not open_:
            return lo, hi, steps, skipped
        middle = (lo + hi) / 2
        index = min(open_, key=lambda i: (abs(i - middle), i))
        step = judge(index)
        steps.append(step)
        if step.verdict == GOOD:
            lo = index
        elif step.verdict == BAD:
            hi = index
        else:
            skipped.add(index)


@dataclass
class PredicateBisect:
    """A bisection by one predicate of a commit (`what` names it): the steps, the last good and first bad commit."""

    what: str
    good: str
    bad: str
    commits: list[str]
    steps: list[Step] = field(default_factory=list)
    last_good: str = ""
    first_bad: str | None = None
    suspects: list[str] = field(default_factory=list)


def bisect_by(good: GymSource, bad: GymSource, what: str, judge: Callable[[GymSource], tuple[str, str, list]]):
    """Walk first-parent history from `good` (an ancestor) to `bad`, judging each commit by `judge(source)` →
    (verdict, why, the folders it ran in); the bad ref must be bad."""
    repo_dir = git.open_repo(good.origin)
    if git.merge_base(repo_dir, good.commit, bad.commit) != good.commit:
        raise UsageError(f"bisecting {what} needs the good ref to be an ancestor of the bad one")
    commits = git.first_parent_commits(repo_dir, good.commit, bad.commit)
    if not commits:
        raise UsageError("--good and --bad are the same commit")
    result = PredicateBisect(what, good.commit, bad.commit, commits)
    print(f"== bisect ({what}): {len(commits)} commit(s) after {good.commit[:12]} up to {bad.commit[:12]}")

    def step(commit: str) -> Step:
        info = git.commit_info(repo_dir, commit)
        print(f"== step: {commit[:12]} {info.get('subject', '')[:70]}", flush=True)
        verdict, why, folders = judge(resolve_ref(commit, good.origin))
        print(f"   {verdict}: {why}", flush=True)
        return Step(commit, info.get("subject", ""), verdict, why, [Path(f) for f in folders])

    first = step(bad.commit)
    if first.verdict != BAD:
        raise UsageError(f"{what}: the bad ref {bad.name} is not bad ({first.verdict}: {first.why})")
    result.steps.append(first)
    lo, hi, steps, skipped = search(commits, lambda i: step(commits[i]))
    result.steps += steps
    result.last_good = commits[lo] if lo >= 0 else good.commit
    hidden = sorted(i for i in skipped if lo < i < hi)
    result.first_bad = None if hidden else commits[hi]
    result.suspects = [commits[i] for i in hidden] + [commits[hi]]
    return result


def write_predicate_bisect(result: PredicateBisect, out: Path, stem: str, title: str) -> list[Path]:
    """<stem>.md and <stem>.json into `out`: each step's verdict and why, the first bad commit."""
    out.mkdir(parents=True, exist_ok=True)
    found = result.first_bad or f"one of {', '.join(c[:12] for c in result.suspects)} (skipped steps hide which)"
    lines = [
        f"# {title}: {result.what}",
        "",
        f"First bad commit: {found}; last good: {result.last_good[:12]}.",
        "",
        "| commit | subject | verdict | why |",
        "|---|---|---|---|",
        *(f"| {s.commit[:12]} | {s.subject[:60]} | {s.verdict} | {s.why.replace('|', '/')} |" for s in result.steps),
    ]
    data = {**asdict(result), "steps": [{**asdict(s), "runs": [str(r) for r in s.runs]} for s in result.steps]}
    return [
        write_text_atomic(out / f"{stem}.md", "\n".join(lines) + "\n"),
        write_text_atomic(out / f"{stem}.json", json.dumps(data, indent=2, default=str) + "\n"),
    ]
