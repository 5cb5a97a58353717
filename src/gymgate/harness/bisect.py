"""Bisecting a regression to the Gym commit that introduced it, the way cargo-bisect-rustc finds a nightly.

Between a good and a bad commit of one repository (first-parent history), every step runs only the chosen paths
(default: those that regress from good to bad) and only their environments, through the same matrix and cache as
`accept`, and judges the commit against the good ref's run with the same comparison:

- bad: a chosen path regresses, breaks or changes unacknowledged (gymgate.verdict FAILING);
- good: every chosen path is as on the good ref;
- skip: the commit cannot be built or no environment starts (as `git bisect skip`); bisection goes around it;
- unsure (a path ERRORed or could not be judged): rerun in fresh Gyms; attempts that agree decide, attempts that
  disagree make the commit flaky, which is skipped too. Nothing is guessed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gymgate import streams
from gymgate.cases.named import load_environments
from gymgate.compare.acks import Reviews
from gymgate.compare.runs import Comparison, compare_runs
from gymgate.errors import UsageError
from gymgate.harness.accept import planned, read_paths, require_judged_attempts
from gymgate.harness.asked import Asked
from gymgate.harness.bisection import ATTEMPTS, FLAKY, GOOD, SKIP, UNSURE, resolve_pair, search
from gymgate.harness.environments import judged_environments, with_derived
from gymgate.harness.matrix import report_dir
from gymgate.harness.run_options import RunOptions
from gymgate.pathid import environments
from gymgate.refs import git
from gymgate.refs.resolve import resolve_ref
from gymgate.refs.source import GymSource
from gymgate.results import BisectResult, RunResult, Step
from gymgate.verdict import FAILING, bisect_exit, commit_verdict


def chosen_paths(comparison: Comparison) -> list[str]:
    """The paths that regress from good to bad: what bisect looks for when not told."""
    return sorted(p.path for p in comparison.paths if p.category in FAILING)


class Bisector:
    """Runs and judges commits of one bisection; each commit is run through the matrix (cache included)."""

    def __init__(self, good_run: Path, paths: list[str], opts: RunOptions, repo: str, acks: Reviews | None = None):
        self.good_run, self.paths, self.opts, self.repo, self.acks = good_run, paths, opts, repo, acks

    def lacking(self, source: GymSource) -> list[str]:
        """Files the chosen paths' environments need that the repository lacks at this commit (a mirror stored
        without some blobs): such a commit cannot be run, only skipped."""
        dirs = affected_dirs(self.paths)
        return [
            f for f in source.extra.get("missing", "").split() if any(f.startswith(d.rstrip("/") + "/") for d in dirs)
        ]

    def run(self, source: GymSource, fresh: bool = False) -> RunResult:
        from gymgate.harness.executor import run_ref  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

        opts = replace(self.opts, cache=self.opts.cache and not fresh)
        return run_ref(source, self.paths, opts, reuse=True, narrowed=True)

    def judge(self, commit: str) -> tuple[str, str, list[Path]]:
        """A commit's verdict. A clear first attempt decides; after an unsure one (an ERROR, a path not judged) the
        commit is rerun in fresh Gyms and two clear attempts that agree decide; attempts that disagree, or not enough
        clear ones, make it flaky (skipped, never guessed)."""
        attempts: list[tuple[str, str]] = []
        runs: list[Path] = []
        source = resolve_ref(commit, self.repo)
        lacking = self.lacking(source)
        if lacking:
            return SKIP, f"the repository lacks files its environment needs: {', '.join(lacking[:3])}", runs
        for attempt in range(ATTEMPTS):
            result = self.run(source, fresh=attempt > 0)
            runs.append(result.dir)
            if result.broken:
                return SKIP, f"cannot be built: {result.broken.splitlines()[0]}", runs
            verdict, why = commit_verdict(compare_runs(self.good_run, result.dir, self.acks), self.paths)
            if verdict == SKIP:
                return SKIP, why, runs
            attempts.append((verdict, why))
            clear = [v for v, _ in attempts if v != UNSURE]
            if len(set(clear)) > 1:
                break
            if (attempt == 0 and clear) or len(clear) >= 2:
                return verdict, why, runs
        return FLAKY, "; ".join(f"attempt {i + 1}: {v} ({w})" for i, (v, w) in enumerate(attempts)), runs


def bisect(
    good_ref: str,
    bad_ref: str,
    repo: str | None,
    paths: list[str] | None,
    all_paths: list[str],
    opts: RunOptions,
    acks: Reviews | None = None,
) -> BisectResult:
    from gymgate.harness.executor import run_ref  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    good, bad = resolve_pair(good_ref, bad_ref, repo)
    repo_url = good.origin
    repo_dir = git.open_repo(repo_url)
    # As git bisect does: when good is not an ancestor of bad (a release tag on its own branch), the search starts
    # at their merge base, which must itself be good (checked first, never assumed).
    base = git.merge_base(repo_dir, good.commit, bad.commit)
    commits = git.first_parent_commits(repo_dir, base, bad.commit)
    if not commits:
        raise UsageError(f"{good_ref} and {bad_ref} are the same commit")
    after = good_ref if base == good.commit else f"the merge base {base[:12]} of {good_ref} and {bad_ref}"
    print(f"== bisect: {len(commits)} first-parent commit(s) after {after} up to {bad_ref}", flush=True)
    wanted = paths or all_paths
    print(f"== good {good_ref}", flush=True)
    good_run = run_ref(good, wanted, opts, reuse=True, narrowed=bool(paths))
    print(f"== bad {bad_ref}", flush=True)
    bad_run = run_ref(bad, wanted, opts, reuse=True, narrowed=bool(paths))
    if bad_run.broken:
        raise UsageError(
            f"the bad ref {bad_ref} cannot be built ({bad_run.broken.splitlines()[0]}); bisect needs one that runs"
        )
    first = compare_runs(good_run.dir, bad_run.dir, acks)
    regressing = chosen_paths(first)
    chosen = sorted(paths) if paths else regressing
    if paths and not set(paths) <= set(regressing):
        raise UsageError(
            f"{', '.join(sorted(set(paths) - set(regressing)))} do(es) not regress from {good_ref} to {bad_ref}"
        )
    result = BisectResult(good, bad, chosen, commits, [], good.commit, bad.commit)
    result.runs = {good.commit: good_run.dir, bad.commit: bad_run.dir}
    if not chosen:
        result.first_bad = None
        return result
    envs = environments(chosen)
    print(f"== bisecting {', '.join(chosen)} (environments: {', '.join(envs)})", flush=True)
    bisector = Bisector(good_run.dir, chosen, replace(opts, envs=envs), repo_url, acks)

    def judge(index: int) -> Step:
        return step_at(commits[index])

    def step_at(commit: str) -> Step:
        info = git.commit_info(repo_dir, commit)
        print(f"== step: {commit[:12]} {info.get('subject', '')[:70]}", flush=True)
        verdict, why, runs = bisector.judge(commit)
        print(f"   {verdict}: {why}", flush=True)
        if runs:
            result.runs[commit] = runs[-1]
        return Step(commit, info.get("subject", ""), verdict, why, runs)

    if base != good.commit:
        step = step_at(base)
        if step.verdict != GOOD:
            raise UsageError(
                f"the merge base {base[:12]} of {good_ref} and {bad_ref} is not good ({step.verdict}: {step.why}): "
                "the regression is not in the history between them"
            )
    lo, hi, steps, skipped = search(commits, judge)
    result.steps = ([step] if base != good.commit else []) + steps
    result.last_good = commits[lo] if lo >= 0 else base
    hidden = sorted(i for i in skipped if lo < i < hi)
    result.first_bad = None if hidden else commits[hi]
    result.suspects = [commits[i] for i in hidden] + [commits[hi]]
    return result


def affected_dirs(paths: list[str]) -> list[str]:
    """The Gym folders of the chosen paths' environments (where the first bad commit's relevant changes are)."""

    envs = load_environments(environments(paths))
    return sorted({d for env in envs for d in env.all_server_dirs})


def write_outcome(result: BisectResult, out: Path, acks: Reviews | None = None) -> list[Path]:
    """bisect.md and bisect.json into `out`, with the commits' subjects and dates, the files the first bad commit
    touched under the affected environments, and the full last-good → first-bad report set."""
    from gymgate.harness.reports import write_reports  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.report.bisect import write_bisect_reports  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    out.mkdir(parents=True, exist_ok=True)
    repo_dir = git.open_repo(result.good.origin)
    info = {c: git.commit_info(repo_dir, c) for c in {result.last_good, *result.suspects}}
    touched, report = [], None
    if result.first_bad:
        touched = git.touched_files(repo_dir, result.first_bad, affected_dirs(result.paths))
        report = out / "last-good-to-first-bad"
        report.mkdir(exist_ok=True)
        write_reports(compare_runs(result.runs[result.last_good], result.runs[result.first_bad], acks), report)
    return write_bisect_reports(result, info, touched, report, out)


def bisect_command(
    good: str,
    bad: str,
    gym_repo: str | None,
    out: Path | None,
    runs_dir: Path | None,
    acks: Reviews,
    asked: Asked,
    run: RunOptions,
    load_metric: str | None = None,
    gym_test: str | None = None,
) -> tuple[int, dict]:
    """`gymgate bisect`: exit 1 when a first bad commit (or its suspects) was found, 0 when nothing regresses."""
    from gymgate.report.bisect import verdict_line  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    if load_metric and gym_test:
        raise UsageError("bisect takes --load-metric or --gym-test, not both")
    if gym_test:
        from gymgate.harness.gym_test_bisect import gym_test_bisect_command  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

        return gym_test_bisect_command(good, bad, gym_repo, out, runs_dir, gym_test)

    if load_metric:
        from gymgate.harness.load_bisect import load_bisect_command  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

        return load_bisect_command(good, bad, gym_repo, out, runs_dir, acks, asked, run, load_metric)
    require_judged_attempts(run)
    envs, uncased = judged_environments(asked)
    sources = [resolve_ref(bad, gym_repo), resolve_ref(good, gym_repo)]
    envs = with_derived(asked, envs, uncased, sources)
    everything, opts = planned(envs, sources, replace(asked, paths=None), run)
    paths = sorted(read_paths(asked.paths, everything)) if asked.paths else None
    result = bisect(good, bad, gym_repo, paths, everything, opts, acks)
    written = write_outcome(result, out or report_dir(runs_dir, "bisect"), acks)
    print("\n" + verdict_line(result), file=streams.view())
    print("written: " + ", ".join(str(p) for p in written), file=streams.view())
    code = bisect_exit(result.paths)
    return code, {
        "kind": "bisect",
        "exit_code": code,
        "verdict": verdict_line(result),
        "written": [str(p) for p in written],
    }
