"""A Gym bump judged end to end: baseline and candidate (each served from the cache when none of its inputs changed
and its stored run is clean), reruns of what did not pass on both refs, then the comparison whose verdict is the
exit code."""

from __future__ import annotations

import sys
from dataclasses import replace

from gymgate.acceptance.limits import DEADLINE_FLOOR_S, DEADLINE_MULTIPLE, derive_deadlines
from gymgate.ci.github import group
from gymgate.compare.acks import Reviews
from gymgate.compare.attempts import labels
from gymgate.errors import EXIT_UNJUDGED
from gymgate.harness.executor import run_ref
from gymgate.harness.reports import compare_and_report
from gymgate.harness.reruns import real_attempt, run_reruns
from gymgate.harness.run_options import RunOptions
from gymgate.refs.source import GymSource
from gymgate.results import BumpResult
from gymgate.runfolder import RunFolder
from gymgate.verdict import HARNESS_ERROR, NO_RECORD, unjudgeable


def judge_bump(
    baseline: GymSource,
    candidate: GymSource,
    expected: list[str],
    opts: RunOptions,
    reruns: int,
    narrowed: bool,
    acks: Reviews | None = None,
    verbose: bool = False,
) -> BumpResult:
    print(f"== baseline {baseline.name}", flush=True)
    base = run_ref(baseline, expected, opts, reuse=True, narrowed=narrowed)
    why = unjudgeable("baseline", baseline.name, base.code, base.broken)
    if why:
        print(f"gymgate: error: {why}; see {base.dir}", file=sys.stderr)
        return BumpResult(base.dir, EXIT_UNJUDGED, why)
    opts = with_baseline_deadlines(opts, RunFolder(base.dir))
    print(f"== candidate {candidate.name}", flush=True)
    # A cached candidate needs no reruns of its own; one whose baseline must be asked again runs fresh, so every
    # rerun of the bump is stored with the candidate run it belongs to.
    unjudged = {HARNESS_ERROR, NO_RECORD} & set(labels(RunFolder(base.dir)).values())
    cand = run_ref(candidate, expected, opts, reuse=not unjudged, narrowed=narrowed)
    why = unjudgeable("candidate", candidate.name, cand.code, cand.broken)
    if why:
        print(f"gymgate: error: {why}; see {cand.dir}", file=sys.stderr)
        return BumpResult(cand.dir, EXIT_UNJUDGED, why)
    with group(f"reruns: {baseline.name} -> {candidate.name}"):
        run_reruns((baseline, base.dir), (candidate, cand.dir), reruns, real_attempt(opts))
    return BumpResult(cand.dir, compare_and_report(base.dir, cand.dir, cand.dir, full=verbose, acks=acks))


def with_baseline_deadlines(opts: RunOptions, baseline: RunFolder) -> RunOptions:
    """The candidate's options with each path's own deadline, derived from what the baseline measured for it
    (acceptance/limits.py), so a hang costs a fraction of --path-timeout; --path-timeout still caps each."""

    deadlines = {p: min(s, opts.path_timeout) for p, s in derive_deadlines(baseline.records().values()).items()}
    if deadlines:
        print(
            f"path deadlines: {min(deadlines.values()):g}-{max(deadlines.values()):g} s "
            f"({DEADLINE_MULTIPLE:g}x the baseline's slowest attempt, at least {DEADLINE_FLOOR_S:g} s, "
            f"at most --path-timeout {opts.path_timeout:g} s)",
            flush=True,
        )
    return replace(opts, deadlines=deadlines)
