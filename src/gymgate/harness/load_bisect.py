"""`bisect --load-metric ENV:METRIC`: the commit that brought a regression under load, the way Chromium's Pinpoint
bisects a performance regression. Between a good and a bad commit (first-parent history, as `bisect`), every step is
a load comparison of the good ref and the commit on the one environment (harness/load.judge_load: both interleaved,
judged against thresholds.toml): bad when the metric regresses at any level (or, for `correctness`, a rollout does
under load), good when it does not; a change that is not significant either way (suspicious) is measured again, up to
bisect.ATTEMPTS runs, and a commit still unsure after them is skipped, as one that cannot be built or judged is —
never guessed."""

from __future__ import annotations

from dataclasses import replace

from gymgate import streams
from gymgate.errors import EXIT_FAILED, EXIT_OK, UsageError
from gymgate.harness.accept import planned
from gymgate.harness.asked import Asked
from gymgate.harness.bisection import (
    ATTEMPTS,
    BAD,
    FLAKY,
    GOOD,
    SKIP,
    UNSURE,
    PredicateBisect,
    bisect_by,
    resolve_pair,
    write_predicate_bisect,
)
from gymgate.harness.environments import judged_environments, with_derived
from gymgate.harness.load import judge_load
from gymgate.harness.matrix import report_dir
from gymgate.harness.run_options import RunOptions
from gymgate.load import declared
from gymgate.load.interleave import LoadRun
from gymgate.refs.resolve import resolve_ref
from gymgate.verdict import LoadCategory, LoadCorrectness

CORRECTNESS = "correctness"  # the metric name that bisects a rollout lost, failed or changed under load


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


def load_bisect(good_ref, bad_ref, repo, env: str, metric: str, opts: RunOptions, acks) -> PredicateBisect:
    good, bad = resolve_pair(good_ref, bad_ref, repo)

    def judge(source) -> tuple[str, str, list]:
        folders = []
        for _ in range(ATTEMPTS):
            run = judge_load(good, source, [env], opts, acks)
            verdict, why = step_verdict(run, env, metric)
            folders.append(str(run.folder))
            if verdict != UNSURE:
                return verdict, why, folders
        return FLAKY, f"not significant either way after {ATTEMPTS} load comparisons: {why}", folders

    return bisect_by(good, bad, f"{env}: {metric} under load", judge)


def load_bisect_command(good, bad, gym_repo, out, runs_dir, acks, asked: Asked, run: RunOptions, load_metric: str):
    env, metric = parse_metric(load_metric)
    asked = replace(asked, envs=[env])
    envs, uncased = judged_environments(asked)
    sources = [resolve_ref(bad, gym_repo), resolve_ref(good, gym_repo)]
    envs = with_derived(asked, envs, uncased, sources)
    _, opts = planned(envs, sources, replace(asked, paths=None), run)
    result = load_bisect(good, bad, gym_repo, env, metric, opts, acks)
    written = write_predicate_bisect(result, out or report_dir(runs_dir, "bisect"), "bisect-load", "Bisect under load")
    line = f"bisect under load: first bad commit {result.first_bad or 'hidden by skipped steps'}"
    print("\n" + line, file=streams.view())
    print("written: " + ", ".join(str(p) for p in written), file=streams.view())
    code = EXIT_FAILED if result.first_bad or result.suspects else EXIT_OK
    return code, {"kind": "bisect", "exit_code": code, "verdict": line, "written": [str(p) for p in written]}
