"""What every bisection shares, whatever it bisects (a path: harness/bisect.py; a metric under load:
harness/load_bisect.py): the verdicts of a step, how often an unsure commit is tried, the pair of refs it walks
between, and the search over first-parent history, skipping as git bisect does."""

from __future__ import annotations

from gymgate.errors import UsageError
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
