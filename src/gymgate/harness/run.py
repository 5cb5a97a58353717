"""One Gym ref through its acceptance paths, into one run folder on this machine: `run_here` (commands
reach it through harness/executor.py, which also sends refs to a cluster).

A ref that resolves but cannot be locked or built here yields a BROKEN run (every selected path BROKEN,
with the cause) instead of an error: for a candidate that is the finding. A ref that does not resolve is
a usage error before anything starts.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gymgate.ci.github import group
from gymgate.compare.alone import judge_run
from gymgate.compare.reuse import find_cached, inputs_digest, shared_digest
from gymgate.envs.child import run_in_env
from gymgate.envs.prepare import prepare_env
from gymgate.errors import BuildError
from gymgate.harness.progress import Progress
from gymgate.harness.run_options import RunOptions
from gymgate.locations import child_package, repo_root
from gymgate.options import SESSION, UP, child_argv
from gymgate.outcomes import BROKEN
from gymgate.pathid import PathId
from gymgate.processes import Terminated
from gymgate.refs.source import GymSource
from gymgate.report.summary import summary_line
from gymgate.results import RunResult
from gymgate.rl import profile as rl_profile
from gymgate.runfolder import FINISHED_STATUSES, PathRecord, RunFolder, RunMark, new_run_id, runs_dir

# The session loads exactly its own plugins (gymgate's, xdist's: session_args), never a pytest plugin that Gym's
# dependencies install (0.2.0-0.7.0 bring hydra's, anyio's and platformdirs': 0.3 CPU-s in every worker, and a
# plugin a later Gym brings could change how the session runs).
SESSION_ENVIRONMENT = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def judged_result(run: RunFolder, pytest_code: int, expected: list[str], **kwargs: Any) -> RunResult:
    """The run judged alone, its closing line printed (its paths are the verdict's to show)."""
    judged = judge_run(run, pytest_code, expected)
    print(f"run {run.root.name}: {summary_line(judged, run)}", flush=True)
    return RunResult(run.root, judged.code, judged=judged, **kwargs)


def prepare(source: GymSource, wide: bool = False):
    """The ref's environment (`wide`: with every runnable server's requirements), announced the way every command
    announces it."""

    print(f"gym ref {source.name!r}: {source.describe()}" + ("" if source.pinned else "  [unpinned]"), flush=True)
    with group(f"environment: {source.name}" + (" (every runnable server)" if wide else "")):
        env = prepare_env(source, wide)
    verb = "built" if env.built else "reused"
    if env.built_from:
        verb = f"built from {env.built_from} (installed {', '.join(env.installed) or 'nothing'})"
    print(
        f"environment {env.key}: {verb} in {env.seconds:.1f}s (Python {env.interpreter.version}, {env.path})",
        flush=True,
    )
    return env


def open_run(source: GymSource, opts: RunOptions, run_id: str, at: Path | None = None) -> RunFolder:
    """A new run folder (at `at`, or a fresh one under the runs dir) holding the resolved ref."""
    if at is None:
        run = RunFolder.create(source.name, run_id, opts.runs_dir)
    else:
        at.mkdir(parents=True, exist_ok=False)
        run = RunFolder(at)
    run.write_source(source.to_json())
    run.write_consumer({"profile": rl_profile.load(opts.rl_profile).to_json(), "recipe": opts.rl_recipe})
    print(f"run {run_id}: {run.root}", flush=True)
    return run.opened()


def record_environment(run: RunFolder, env) -> None:
    run.keep_environment(
        env.project / "uv.lock",
        {
            "key": env.key,
            "python": env.interpreter.version,
            "interpreter": env.interpreter.provenance(),
            "project": str(env.project),
        },
    )


def service_args(run: RunFolder, opts: RunOptions) -> list[str]:
    """`up`'s child command line: where the run goes, which Gyms, and their start and stop bounds."""
    return child_argv(UP, opts, run_dir=run.root)


def run_here(
    source: GymSource,
    expected: list[str],
    opts: RunOptions,
    *,
    reuse: bool = False,
    run_dir: Path | None = None,
    narrowed: bool = False,
    run_id: str = "",
    admit: Callable[[Any], None] | None = None,
) -> RunResult:
    """Run `expected` paths of `source` (or serve a stored clean run with the same inputs, when `reuse` and the
    options allow the cache), in four steps: build the ref's environment (a ref that cannot be built is a BROKEN
    run), look in the cache, open the run folder, run the in-environment session and mark how it ended.
    `narrowed`: only `expected` runs (passed to pytest path by path), not the whole selection. Here, whatever the
    options say: commands choose where a ref runs through harness/executor.py; a cluster node's unit (harness/unit.py)
    calls this with its caller's `run_id` and `admit`: the environment it built, refused unless it is the one the
    caller expects."""

    run_id = run_id or new_run_id()
    try:
        env = prepare(source, opts.wide)
    except BuildError as exc:
        run = open_run(source, opts, run_id, run_dir)
        write_broken_run(run, source, expected, f"build: {exc}", run_id)
        print(f"gymgate: {source.name} is BROKEN: {str(exc).splitlines()[0]}", file=sys.stderr)
        return judged_result(run, 1, expected, broken=str(exc))
    if admit is not None:
        admit(env)
    shared = shared_digest(source.digest, env.project / "uv.lock", f"{env.interpreter.version} {env.interpreter.build}")
    plan = opts.paths_of(expected)
    unplanned = sorted(set(expected) - {p["id"] for p in plan})
    if unplanned:  # the session runs exactly the plan: a path nobody planned would never run
        raise ValueError(f"{source.name}: paths expected but not planned: {', '.join(unplanned[:5])}")
    inputs = inputs_digest(shared, expected, opts.attempts, plan, opts.consumer)
    stored = served(inputs, opts) if reuse else None
    if stored is not None:
        return judged_result(stored, 0, expected, cached=True)
    run = open_run(source, opts, run_id, run_dir)
    record_environment(run, env)
    run.write_plan(plan)
    mark = RunMark(
        expected=expected,
        run_id=run_id,
        inputs=inputs,
        shared_inputs=shared,
        shard=opts.shard,
        started=time.time(),
        deadlines=dict(opts.deadlines),
    )
    code = run_session(env, run, mark, session_args(run, opts, expected if narrowed else None), opts)
    return judged_result(run, code, expected)


def served(inputs: str, opts: RunOptions) -> RunFolder | None:
    """A stored run with exactly these inputs the options let the cache serve (compare/reuse.py), announced."""

    if not opts.cache or opts.selftest:  # gymgate's own negative tests are asked for: they run
        return None
    stored = find_cached(opts.runs_dir or runs_dir(), inputs, opts.reuse_since)
    if stored is not None:
        print(f"cached: {stored.root} (none of its inputs changed: sha256:{inputs[:12]}; --no-cache runs it again)")
    return stored


def session_args(run: RunFolder, opts: RunOptions, only: list[str] | None) -> list[str]:
    """The in-environment session's command line: pytest with gymgate's session plugin over the path items."""
    session = child_package() / "session"
    args = ["-m", "pytest", "-p", "xdist.plugin", "-p", "gymgate.session.plugin", str(session / "items.py")]
    if opts.selftest:
        args.append(str(session / "selftest.py"))
    args += ["-p", "no:cacheprovider", "--rootdir", str(repo_root()), "-q", "-rfEs"]
    args += child_argv(SESSION, opts, run_dir=run.root, only_paths=only)
    if opts.workers != "0":
        args += ["-n", opts.workers]  # pytest-xdist's own option
    return args


def run_session(env, run: RunFolder, mark: RunMark, args: list[str], opts: RunOptions) -> int:
    """Run the session inside the ref's environment under the whole run's deadline, showing progress, and mark
    the run with how it ended (an interrupt marks it incomplete and propagates). Returns pytest's exit status."""

    print(f"workers: {opts.workers}; pytest output: {run.pytest_log}", flush=True)
    run.write_mark(mark)  # an interrupted run stays marked incomplete
    deadline = run_deadline(opts, len(mark.expected))
    try:
        envs = len({PathId(p).env for p in mark.expected})
        with Progress(run, total_paths=len(mark.expected), total_envs=envs):
            child_exit = run_in_env(
                env,
                args,
                mark.run_id,
                cwd=repo_root(),
                log=run.pytest_log,
                timeout_s=deadline,
                extra=SESSION_ENVIRONMENT,
            )
    except KeyboardInterrupt as exc:
        mark.finished = time.time()
        mark.incomplete = f"interrupted ({'SIGTERM' if isinstance(exc, Terminated) else 'SIGINT'})"
        run.write_mark(mark)
        raise
    code = child_exit.code
    mark.pytest_exit, mark.finished, mark.complete = code, time.time(), code in FINISHED_STATUSES
    if child_exit.timed_out:
        mark.incomplete = f"the test session did not finish within its deadline ({deadline:g} s)"
    elif not mark.complete:
        mark.incomplete = f"the test session ended with status {code} before judging every path"
    if child_exit.leftovers:
        mark.lifecycle = [f"{len(child_exit.leftovers)} process(es) of the run outlived it and were killed"]
    run.write_mark(mark)
    if code not in FINISHED_STATUSES:
        tail = run.pytest_log.read_text(errors="replace").splitlines()[-25:]
        print("\n".join(["", f"pytest exited {code}; last lines of {run.pytest_log}:", *tail]), file=sys.stderr)
    return code


def run_deadline(opts: RunOptions, paths: int) -> float:
    """The whole session's bound: every Gym starting (twice, for restarts), every path at its deadline, every stop,
    and slack for Ray and pytest. Only a hang the finer deadlines miss ever reaches it."""
    return 2 * opts.spinup_timeout + paths * opts.attempts * opts.path_timeout + 2 * opts.stop_timeout + 300.0


def write_broken_run(run: RunFolder, source: GymSource, expected: list[str], reason: str, run_id: str) -> None:
    """A complete run whose every path is BROKEN with `reason`; comparable like any other run, never reused."""
    for path in expected:
        run.write_record(PathRecord.stub(path, BROKEN, reason, gym=source.to_json()))
    now = time.time()
    mark = RunMark(expected=expected, complete=True, broken=reason, started=now, finished=now, run_id=run_id)
    run.write_mark(mark)
