"""One Gym ref through the acceptance matrix, into one run folder.

A ref that resolves but cannot be locked or built here yields a BROKEN run (every selected path BROKEN,
with the cause) instead of an error: for a candidate that is the finding. A ref that does not resolve is
a usage error before anything starts.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gymgate.acceptance.record import stub_record
from gymgate.atomic import write_json_atomic
from gymgate.errors import BuildError
from gymgate.outcomes import BROKEN
from gymgate.refs.model import GymSource
from gymgate.runfolder import FINISHED_STATUSES, opened, write_mark


@dataclass(frozen=True)
class RunOptions:
    """What every run of one `accept` shares, whichever ref it is for."""

    envs: list[str] | None = None
    runs_dir: Path | None = None
    spinup_timeout: float = 600.0
    workers: str = "auto"
    selftest: bool = False
    path_timeout: float = 180.0  # seconds one rollout may take before its path is an ERROR (gym, timeout)
    stop_timeout: float = 60.0  # seconds one Gym may take to stop gracefully before it is killed


@dataclass(frozen=True)
class RunResult:
    dir: Path
    code: int  # the run's own verdict: 0 clean, 1 failures (or broken), 2 not judged
    broken: str = ""  # why this ref could not be locked or built, if it could not
    reused: bool = False


def prepare(source: GymSource):
    """The ref's environment, announced the way every command announces it."""
    from gymgate.envs.prepare import prepare_env

    print(f"gym ref {source.name!r}: {source.describe()}" + ("" if source.pinned else "  [unpinned]"), flush=True)
    env = prepare_env(source)
    verb = "built" if env.built else "reused"
    print(
        f"environment {env.key}: {verb} in {env.seconds:.1f}s (Python {env.interpreter.version}, {env.path})",
        flush=True,
    )
    return env


def open_run_dir(source: GymSource, opts: RunOptions, run_id: str, run_dir: Path | None = None) -> Path:
    from gymgate.runner import new_run_dir

    if run_dir is None:
        run_dir = new_run_dir(source.name, run_id, opts.runs_dir)
    else:
        run_dir.mkdir(parents=True, exist_ok=False)
    (run_dir / "source.json").write_text(json.dumps(source.to_json(), indent=2))
    print(f"run {run_id}: {run_dir}", flush=True)
    return opened(run_dir)


def record_environment(run_dir: Path, env) -> None:
    # The lock travels with the run, so two stored runs can be compared without their checkouts.
    shutil.copyfile(env.project / "uv.lock", run_dir / "uv.lock")
    (run_dir / "environment.json").write_text(
        json.dumps({"key": env.key, "python": env.interpreter.version, "project": str(env.project)}, indent=2)
    )


def service_args(run_dir: Path, opts: RunOptions) -> list[str]:
    args = ["--run-dir", str(run_dir), "--spinup-timeout", str(opts.spinup_timeout)]
    args += ["--stop-timeout", str(opts.stop_timeout)]
    for name in opts.envs or []:
        args += ["--env", name]
    return args


def accept_ref(
    source: GymSource,
    expected: list[str],
    opts: RunOptions,
    *,
    reuse: bool = False,
    run_dir: Path | None = None,
    narrowed: bool = False,
) -> RunResult:
    """Run `expected` paths of `source` (or reuse a stored run with the same inputs when `reuse`).
    `narrowed`: only `expected` runs (passed to pytest path by path), not the whole selection."""
    from gymgate.compare.baseline import find_reusable, inputs_digest
    from gymgate.matrix.progress import Progress
    from gymgate.paths import PACKAGE_DIR, repo_root
    from gymgate.report.summary import print_summary
    from gymgate.runner import Terminated, new_run_id, run_in_env, runs_dir

    run_id = new_run_id()
    try:
        env = prepare(source)
    except BuildError as exc:
        run_dir = open_run_dir(source, opts, run_id, run_dir)
        write_broken_run(run_dir, source, expected, f"build: {exc}")
        print(f"gymgate: {source.name} is BROKEN: {str(exc).splitlines()[0]}", file=sys.stderr)
        return RunResult(run_dir, print_summary(run_dir, pytest_code=1, expected=expected), broken=str(exc))
    inputs = inputs_digest(source.digest, env.project / "uv.lock", env.interpreter.version, expected)
    if reuse:
        stored = find_reusable(opts.runs_dir or runs_dir(), inputs)
        if stored is not None:
            print(f"reusing {stored}: none of its inputs changed (inputs sha256:{inputs[:12]})", flush=True)
            return RunResult(stored, print_summary(stored, pytest_code=0, expected=expected), reused=True)
    run_dir = open_run_dir(source, opts, run_id, run_dir)
    record_environment(run_dir, env)
    session = PACKAGE_DIR / "session"
    child = [
        "-m",
        "pytest",
        "-p",
        "gymgate.session.plugin",
        str(session / "items.py"),
        *([str(session / "selftest.py")] if opts.selftest else []),
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(repo_root()),
        "--gym-source",
        str(run_dir / "source.json"),
        "-q",
        "-rfEs",
        *service_args(run_dir, opts),
    ]
    child += ["--path-timeout", str(opts.path_timeout)]
    if opts.workers != "0":
        child += ["-n", opts.workers]
    if narrowed:
        child += [a for p in expected for a in ("--path", p)]
    log = run_dir / "pytest.log"
    print(f"workers: {opts.workers}; pytest output: {log}", flush=True)
    mark = {"run_id": run_id, "complete": False, "started": time.time(), "inputs": inputs, "expected": expected}
    write_mark(run_dir, mark)  # an interrupted run stays marked incomplete
    deadline = run_deadline(opts, len(expected))
    try:
        with Progress(run_dir, total_paths=len(expected)):
            child_exit = run_in_env(env, child, run_id, cwd=repo_root(), log=log, timeout_s=deadline)
    except KeyboardInterrupt as exc:
        signal_name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        write_mark(run_dir, {**mark, "finished": time.time(), "incomplete": f"interrupted ({signal_name})"})
        raise
    code = child_exit.code
    mark.update(pytest_exit=code, finished=time.time(), complete=code in FINISHED_STATUSES)
    if child_exit.timed_out:
        mark["incomplete"] = f"the test session did not finish within its deadline ({deadline:g} s)"
    elif not mark["complete"]:
        mark["incomplete"] = f"the test session ended with status {code} before judging every path"
    if child_exit.leftovers:
        mark["lifecycle"] = [f"{len(child_exit.leftovers)} process(es) of the run outlived it and were killed"]
    write_mark(run_dir, mark)
    if code not in FINISHED_STATUSES:
        tail = log.read_text(errors="replace").splitlines()[-25:]
        print("\n".join(["", f"pytest exited {code}; last lines of {log}:", *tail]), file=sys.stderr)
    return RunResult(run_dir, print_summary(run_dir, pytest_code=code, expected=expected))


def run_deadline(opts: RunOptions, paths: int) -> float:
    """The whole session's bound: every Gym starting (twice, for restarts), every path at its deadline, every stop,
    and slack for Ray and pytest. Only a hang the finer deadlines miss ever reaches it."""
    return 2 * opts.spinup_timeout + paths * opts.path_timeout + 2 * opts.stop_timeout + 300.0


def write_broken_run(run_dir: Path, source: GymSource, expected: list[str], reason: str) -> None:
    """A complete run whose every path is BROKEN with `reason`; comparable like any other run, never reused."""
    (run_dir / "paths").mkdir(exist_ok=True)
    for path in expected:
        record = stub_record(path, BROKEN, reason, gym=source.to_json())
        write_json_atomic(run_dir / "paths" / f"{record['env']}-{record['mode']}.json", record)
    now = time.time()
    write_mark(
        run_dir,
        {
            "complete": True,
            "broken": reason,
            "pytest_exit": None,
            "started": now,
            "finished": now,
            "expected": expected,
        },
    )
