"""Running one suite (a ref's tests over a ref's code) in the code's environment and reading what each test did.

Each server's tests run in their own pytest process, from the server's folder as Gym's `ng_test` runs them (their
own modules import as they expect; a server's global state, Ray's included, is its own), `workers` servers at once;
the core's tests after them, fanned out over `workers` pytest-xdist workers. Each process has its own process group,
run marker, HOME and temporary folders inside the scratch tree; the network beyond loopback is unreachable (a proxy
nobody listens on) and hub downloads are off.

A test gets `TEST_TIMEOUT_S` (pytest-timeout: past it, that test fails); a batch gets `BATCH_TIMEOUT_S`: past it the
process group is killed, the tests that were running are recorded as hung (a failure of each) and the batch runs
again without them, so a hang never costs the run its other tests. Whatever a test started is swept at the end.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.envs.child import child_environment
from gymgate.envs.sync import SyncedEnv
from gymgate.gymtests.roots import Root, root_of
from gymgate.processes import kill_group, remove_temp_dirs, run_temp_dir, sweep
from gymgate.runfolder import new_run_id

TEST_TIMEOUT_S = 120.0
BATCH_TIMEOUT_S = 900.0
RESTARTS = 3  # a batch runs again after a hang, each time without the hung tests
POLL_S = 0.2
STOP_GRACE_S = 10.0
UNREACHABLE_PROXY = "http://127.0.0.1:9"  # the discard port: refused at once on loopback

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
HUNG = "hung"  # past its root's bound: killed with its root (a failure of the test)
FINISHED = "finished"  # a root's pytest ran to its end (its tests passed or failed)
NO_TESTS = "no tests"  # the tests' ref has no tests for this root
ABSENT = "absent"  # the code's ref has no such server


@dataclass
class TestRun:
    """What one test did in one suite run: passed, failed (with the first line of why), skipped (why), hung."""

    __test__ = False  # not a test class (pytest collects names starting with Test)

    outcome: str
    message: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "message": self.message, "seconds": round(self.seconds, 3)}


@dataclass
class RootRun:
    """One root's tests in one suite run: each test's run, each test file that could not be collected (why), and
    whether the root's process finished (`status`: finished, or what stopped it)."""

    root: Root
    tests: dict[str, TestRun] = field(default_factory=dict)
    uncollected: dict[str, str] = field(default_factory=dict)
    status: str = FINISHED
    seconds: float = 0.0
    log: str = ""

    def to_json(self) -> dict:
        return {
            "root": self.root.path,
            "label": self.root.label,
            "status": self.status,
            "seconds": round(self.seconds, 1),
            "log": self.log,
            "uncollected": self.uncollected,
            "tests": {k: v.to_json() for k, v in sorted(self.tests.items())},
        }

    @classmethod
    def from_json(cls, data: dict) -> RootRun:
        run = cls(Root(data["root"], data["label"]), status=data["status"], seconds=data["seconds"], log=data["log"])
        run.uncollected = dict(data["uncollected"])
        run.tests = {k: TestRun(v["outcome"], v["message"], v["seconds"]) for k, v in data["tests"].items()}
        return run


def first_error_line(text: str) -> str:
    """The line that says what went wrong in a pytest report's text (its last `E   ` line), at most 400 characters."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    found = lines[-1] if lines else (text.strip().splitlines() or [""])[-1]
    return found[:400]


MESSAGE_CHARS = 600


def _explained(longrepr: dict) -> str:
    """pytest's own explanation of a failure: the `E` lines of its last traceback entry (an assertion's diff), or the
    crash's first line, at most MESSAGE_CHARS characters."""
    entries = (longrepr.get("reprtraceback") or {}).get("reprentries") or [{}]
    lines = [line[1:].strip() for line in (entries[-1].get("data") or {}).get("lines", []) if line.startswith("E ")]
    said = " / ".join(line for line in lines if line and not line.startswith("Use -v"))
    crash = str((longrepr.get("reprcrash") or {}).get("message") or "").strip()
    return (said or (crash.splitlines() or [""])[0])[:MESSAGE_CHARS]


def _message(longrepr) -> str:
    if isinstance(longrepr, dict):
        return _explained(longrepr) or first_error_line(json.dumps(longrepr))
    if isinstance(longrepr, list) and len(longrepr) == 3:  # a skip: [path, line, "Skipped: why"]
        return str(longrepr[2]).removeprefix("Skipped: ")[:400]
    return first_error_line(str(longrepr or ""))


def read_report_log(path: Path, results: dict[str, RootRun]) -> set[str]:
    """Fill each root's run (`results`, by root path) from a pytest-reportlog file; returns the tests that started
    (setup reported) and did not end. A report outside every root is not ours and is left out."""
    started: set[str] = set()
    roots = [r.root for r in results.values()]
    if not path.is_file():
        return started
    for line in path.read_text(errors="replace").splitlines():
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a killed run
        kind = report.get("$report_type")
        nodeid, outcome = report.get("nodeid") or "", report.get("outcome")
        root = root_of(nodeid, roots)
        if root is None:
            continue
        run = results[root.path]
        if kind == "CollectReport" and outcome == "failed" and nodeid:
            run.uncollected[nodeid] = _message(report.get("longrepr"))
        if kind != "TestReport":
            continue
        when, seconds = report.get("when"), float(report.get("duration") or 0.0)
        current = run.tests.get(nodeid)
        if when == "setup":
            started.add(nodeid)
        if when == "teardown":
            started.discard(nodeid)
        if outcome == FAILED:
            if current is None or current.outcome != FAILED:
                prefix = "" if when == "call" else f"in {when}: "
                run.tests[nodeid] = TestRun(FAILED, prefix + _message(report.get("longrepr")), seconds)
        elif outcome == SKIPPED and "wasxfail" not in report:
            if current is None:
                run.tests[nodeid] = TestRun(SKIPPED, _message(report.get("longrepr")), seconds)
        elif current is None and when == "call":
            run.tests[nodeid] = TestRun(PASSED, "", seconds)  # passed, or failed as it is marked to (xfail)
        elif current is not None and current.outcome == PASSED:
            current.seconds += seconds
        if when == "teardown" and nodeid not in run.tests:  # a phase-less pass (no call report): setup then teardown
            run.tests[nodeid] = TestRun(PASSED, "", seconds)
    return started


@dataclass
class Suite:
    """One suite run: the tests of `tests_ref` over the code of `code_ref`, in `tree` (built by overlay.build)."""

    tests_ref: str
    code_ref: str
    tree: Path
    config: Path
    env: SyncedEnv
    layer: Path


def _pytest_args(suite: Suite, roots: Sequence[Root], report: Path, workers: int, only, skip, tmp: Path) -> list[str]:
    args = ["-m", "pytest", "-p", "no:cacheprovider", "-c", str(suite.config), "--rootdir", str(suite.tree)]
    args += ["-o", "addopts=--strict-markers", "-o", "log_cli=false", "-n", str(workers)]
    args += ["--continue-on-collection-errors", "-q", "-rN", "--timeout", f"{TEST_TIMEOUT_S:g}"]
    args += ["--timeout-method", "signal", "--report-log", str(report), "--basetemp", str(tmp / "pt")]
    for nodeid in skip:
        args += ["--deselect", nodeid]
    at = f"{roots[0].path}/" if roots[0].path else ""  # the process runs from its root's folder
    if only is not None:
        return args + [n.removeprefix(at) for r in roots for n in only.get(r.path, [])]
    return args + [r.tests.removeprefix(at) for r in roots]


def _environment(suite: Suite, run_id: str, tmp: Path) -> dict[str, str]:
    """HOME in the scratch tree; TMPDIR a short folder of the run's own under /tmp (AF_UNIX socket paths, Ray's
    among them, stay within 107 bytes), removed with the run."""
    home = suite.tree / ".tmp" / "home"
    home.mkdir(parents=True, exist_ok=True)
    extra = {
        "PYTHONPATH": str(suite.layer),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "HF_HOME": str(home / ".cache" / "huggingface"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        extra[var] = UNREACHABLE_PROXY
    env = child_environment(suite.env, run_id, extra)
    for var in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_PLUGINS", "PYTEST_XDIST_AUTO_NUM_WORKERS"):
        env.pop(var, None)
    return env


def _stop(proc: subprocess.Popen, run_id: str) -> None:
    """The batch's process group: SIGINT, then SIGKILL after STOP_GRACE_S; then whatever carries its marker, and its
    temporary folder."""
    if proc.poll() is None:
        kill_group(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_GRACE_S)
    kill_group(proc.pid, signal.SIGKILL)
    sweep(run_id)
    remove_temp_dirs(run_id)


PYTEST_FINISHED = (0, 1, 5)  # all passed, some failed, none collected


def _run_batch(
    suite: Suite,
    roots: Sequence[Root],
    logs: Path,
    name: str,
    results: dict[str, RootRun],
    workers: int,
    only,
    timeout_s: float,
    stopping: threading.Event,
) -> None:
    """One batch to its end, again without the hung tests after each hang (at most RESTARTS times)."""
    skip: list[str] = []
    for attempt in range(RESTARTS + 1):
        if stopping.is_set():
            return
        run_id, report, log = new_run_id(), logs / f"{name}.{attempt}.jsonl", logs / f"{name}.log"
        tmp = run_temp_dir("t", run_id)
        for root in roots:
            results[root.path].log = str(log)
        started = time.monotonic()
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [str(suite.env.python), *_pytest_args(suite, roots, report, workers, only, skip, tmp)],
                cwd=suite.tree / roots[0].path if roots[0].path else suite.tree,
                env=_environment(suite, run_id, tmp),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            while proc.poll() is None and time.monotonic() - started < timeout_s and not stopping.is_set():
                time.sleep(POLL_S)
            code = proc.poll()
        finally:
            _stop(proc, run_id)
        seconds = time.monotonic() - started
        hung = read_report_log(report, {r.path: results[r.path] for r in roots})
        for root in roots:
            results[root.path].seconds += seconds / len(roots)
        if stopping.is_set():
            return
        if code is not None:
            if code not in PYTEST_FINISHED:
                for root in roots:
                    results[root.path].status = f"pytest ended with exit status {code}"
            return
        for nodeid in hung:
            owner = root_of(nodeid, roots)
            if owner is not None:
                results[owner.path].tests[nodeid] = TestRun(HUNG, f"still running after its batch's {timeout_s:g} s")
        skip += sorted(hung)
    for root in roots:
        results[root.path].status = f"stopped after {timeout_s:g} s, {RESTARTS + 1} times"


def run_suite(
    suite: Suite,
    roots: Sequence[Root],
    logs: Path,
    workers: int = 2,
    only: dict[str, list[str]] | None = None,
    timeout_s: float = BATCH_TIMEOUT_S,
) -> list[RootRun]:
    """Every root's tests of `suite` (or, with `only`, just the named tests of each root named there)."""
    logs.mkdir(parents=True, exist_ok=True)
    results = {r.path: RootRun(r) for r in roots if only is None or only.get(r.path)}
    runnable = []
    for root in roots:
        if root.path not in results:
            continue
        if not (suite.tree / (root.path or ".")).is_dir():
            results[root.path].status = ABSENT
        elif not (suite.tree / root.tests).is_dir():
            results[root.path].status = NO_TESTS
        else:
            runnable.append(root)
    stopping = threading.Event()
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        pending = [
            pool.submit(_run_batch, suite, [r], logs, _slug(r), results, 0, only, timeout_s, stopping)
            for r in runnable
            if r.path
        ]
        while not all(future.done() for future in pending):
            time.sleep(POLL_S)  # not a blocking wait: an interrupt is taken at once
        for future in pending:
            future.result()
        for root in (r for r in runnable if not r.path):
            _run_batch(suite, [root], logs, _slug(root), results, workers, only, timeout_s, stopping)
    finally:
        stopping.set()  # on an interrupt: every batch still running stops its process group, none starts
        pool.shutdown(wait=True)
    return [results[r.path] for r in roots if r.path in results]


def _slug(root: Root) -> str:
    return (root.path or "core").replace("/", "__")
