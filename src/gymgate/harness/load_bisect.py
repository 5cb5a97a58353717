"""`bisect --load-metric ENV:METRIC`: the commit that brought a regression under load, the way Chromium's Pinpoint
bisects a performance regression. Between a good and a bad commit (first-parent history, as `bisect`), every step is
a load comparison of the good ref and the commit on the one environment (harness/load.judge_load: both interleaved,
judged against thresholds.toml): bad when the metric regresses at any level (or, for `correctness`, a rollout does
under load), good when it does not; a change that is not significant either way (suspicious) is measured again, up to
bisect.ATTEMPTS runs, and a commit still unsure after them is skipped, as one that cannot be built or judged is —
never guessed."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from gymgate import streams
from gymgate.atomic import write_text_atomic
from gymgate.errors import EXIT_FAILED, EXIT_OK, UsageError
from gymgate.harness.accept import planned
from gymgate.harness.asked import Asked
from gymgate.harness.bisection import ATTEMPTS, BAD, FLAKY, GOOD, SKIP, UNSURE, resolve_pair, search
from gymgate.harness.environments import judged_environments, with_derived
from gymgate.harness.load import judge_load
from gymgate.harness.matrix import report_dir
from gymgate.harness.run_options import RunOptions
from gymgate.load import declared
from gymgate.load.interleave import LoadRun
from gymgate.refs import git
from gymgate.refs.resolve import resolve_ref
from gymgate.results import Step
from gymgate.verdict import LoadCategory, LoadCorrectness

CORRECTNESS = "correctness"  # the metric name that bisects a rollout lost, failed or changed under load


@dataclass
class LoadBisect:
    env: str
    metric: str
    good: str
    bad: str
    commits: list[str]
    steps: list[Step] = field(default_factory=list)
    last_good: str = ""
    first_bad: str | None = None
    suspects: list[str] = field(default_factory=list)


def parse_metric(value: str) -> tuple[str, str]:
    env, _, metric = value.partition(":")
    known = [m.name for m in declared.thresholds().metrics] + [CORRECTNESS]
    if not env or metric not in known:
        raise UsageError(f"--load-metric {value!r}: give ENV:METRIC, METRIC one of {', '.join(known)}")
    return env, metric


def step_verdict(run: LoadRun, env: str, metric: str) -> tuple[str, str]:
    """(good | bad | skip | unsure, why) of one load comparison, for the bisected metric."""
    verdict = run.verdict
    if verdict.unjudged:
        return SKIP, verdict.unjudged[0]
    if metric == CORRECTNESS:
        found = [c for c in [*verdict.correctness, *verdict.saturation] if c.env == env]
        bad = [c for c in found if c.category == LoadCorrectness.REGRESSED]
        return (BAD, bad[0].figure()) if bad else (GOOD, "every rollout as alone")
    found = [m for m in verdict.metrics if m.env == env and m.metric == metric]
    for category, answer in ((LoadCategory.REGRESSION, BAD), (LoadCategory.INSUFFICIENT, SKIP)):
        hits = [m for m in found if m.category == category]
        if hits:
            return answer, hits[0].figure(verdict.confidence)
    near = [m for m in found if m.category == LoadCategory.SUSPICIOUS]
    if near:
        return UNSURE, near[0].figure(verdict.confidence)
    worst = max(found, key=lambda m: abs((m.change or 1.0) - 1.0), default=None)
    return GOOD, worst.figure(verdict.confidence) if worst else "no such metric measured"


def load_bisect(good_ref, bad_ref, repo, env: str, metric: str, opts: RunOptions, acks) -> LoadBisect:
    good, bad = resolve_pair(good_ref, bad_ref, repo)
    repo_dir = git.open_repo(good.origin)
    base = git.merge_base(repo_dir, good.commit, bad.commit)
    if base != good.commit:
        raise UsageError(f"bisect --load-metric needs {good_ref} to be an ancestor of {bad_ref}")
    commits = git.first_parent_commits(repo_dir, base, bad.commit)
    if not commits:
        raise UsageError(f"{good_ref} and {bad_ref} are the same commit")
    result = LoadBisect(env, metric, good.commit, bad.commit, commits)
    print(f"== bisect under load ({env}: {metric}): {len(commits)} commit(s) after {good_ref} up to {bad_ref}")

    def judge_commit(commit: str) -> Step:
        info = git.commit_info(repo_dir, commit)
        print(f"== step: {commit[:12]} {info.get('subject', '')[:70]}", flush=True)
        source = resolve_ref(commit, good.origin)
        attempts = []
        for _ in range(ATTEMPTS):
            run = judge_load(good, source, [env], opts, acks)
            verdict, why = step_verdict(run, env, metric)
            attempts.append(str(run.folder))
            if verdict != UNSURE:
                break
        else:
            verdict, why = FLAKY, f"not significant either way after {ATTEMPTS} load comparisons: {why}"
        print(f"   {verdict}: {why}", flush=True)
        return Step(commit, info.get("subject", ""), verdict, why, [Path(a) for a in attempts])

    first = judge_commit(bad.commit)
    if first.verdict != BAD:
        raise UsageError(f"{env}: {metric} does not regress under load from {good_ref} to {bad_ref} ({first.why})")
    result.steps.append(first)
    lo, hi, steps, skipped = search(commits, lambda i: judge_commit(commits[i]))
    result.steps += steps
    result.last_good = commits[lo] if lo >= 0 else good.commit
    hidden = sorted(i for i in skipped if lo < i < hi)
    result.first_bad = None if hidden else commits[hi]
    result.suspects = [commits[i] for i in hidden] + [commits[hi]]
    return result


def write_load_bisect(result: LoadBisect, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    found = result.first_bad or f"one of {', '.join(c[:12] for c in result.suspects)} (skipped steps hide which)"
    lines = [
        f"# Bisect under load: {result.env}: {result.metric}",
        "",
        f"First bad commit: {found}; last good: {result.last_good[:12]}.",
        "",
        "| commit | subject | verdict | why |",
        "|---|---|---|---|",
        *(f"| {s.commit[:12]} | {s.subject[:60]} | {s.verdict} | {s.why.replace('|', '/')} |" for s in result.steps),
    ]
    data = {**asdict(result), "steps": [{**asdict(s), "runs": [str(r) for r in s.runs]} for s in result.steps]}
    return [
        write_text_atomic(out / "bisect-load.md", "\n".join(lines) + "\n"),
        write_text_atomic(out / "bisect-load.json", json.dumps(data, indent=2, default=str) + "\n"),
    ]


def load_bisect_command(good, bad, gym_repo, out, runs_dir, acks, asked: Asked, run: RunOptions, load_metric: str):
    env, metric = parse_metric(load_metric)
    asked = replace(asked, envs=[env])
    envs, uncased = judged_environments(asked)
    sources = [resolve_ref(bad, gym_repo), resolve_ref(good, gym_repo)]
    envs = with_derived(asked, envs, uncased, sources)
    _, opts = planned(envs, sources, replace(asked, paths=None), run)
    result = load_bisect(good, bad, gym_repo, env, metric, opts, acks)
    written = write_load_bisect(result, out or report_dir(runs_dir, "bisect"))
    line = f"bisect under load: first bad commit {result.first_bad or 'hidden by skipped steps'}"
    print("\n" + line, file=streams.view())
    print("written: " + ", ".join(str(p) for p in written), file=streams.view())
    code = EXIT_FAILED if result.first_bad or result.suspects else EXIT_OK
    return code, {"kind": "bisect", "exit_code": code, "verdict": line, "written": [str(p) for p in written]}
