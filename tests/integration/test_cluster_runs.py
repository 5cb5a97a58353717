"""gymgate on a Ray cluster (issue 32), for real, on this machine: a head that runs no unit and two worker nodes
(tools/local_cluster.py: each its own raylet, resources and gymgate cache, on 127.0.0.2), started with a Python that has
Ray and not gymgate, as a cluster's own Python would be. A matrix of two pins sent there runs one unit per node at
once, each node building only its own pin's environment, and its reports are the local matrix's; Ctrl-C on the
caller, or the cluster lost mid-run, leaves the run unjudged and nothing running. A Gym mutant (a local tree, sent as a pack) is caught there
exactly as it is here. A second cluster, secured with token authentication as an operator would secure a shared one,
runs a matrix for a caller that holds its token, refuses one that holds a wrong token or none with a clear usage
error, and the token is nowhere in what gymgate prints or writes."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gymgate.errors import EXIT_INTERRUPTED, EXIT_UNJUDGED
from gymgate.locations import cache_dir, repo_root
from gymgate.processes import marked_pids
from gymgate.remote.node import UNIT_MARKER
from tests.helpers import moved_home
from tests.integration import mutation
from tests.integration import test_load_mutants as load_mutants

sys.path.insert(0, str(repo_root() / "tools"))
import local_cluster  # noqa: E402

PINS = ("0.4.0", "0.7.0")
NODES = ("node_a", "node_b")
MCQA = ("--env", "mcqa", "--no-cache")
# What differs between two runs of the same inputs anywhere: run folders, times, seconds.
VOLATILE = re.compile(r"[0-9]{8}-[0-9]{6}-[^ )/`\"]*|/tmp/[^ )`\"]*|[0-9]+(\.[0-9]+)? ?s\b")


@pytest.fixture(scope="module")
def ray_python(tmp_path_factory) -> str:
    return local_cluster.ray_python(tmp_path_factory.mktemp("ray-python") / "venv", repo_root())


@pytest.fixture(scope="module")
def cluster(ray_python, tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    caches = {name: root / f"cache-{name}" for name in NODES}
    with local_cluster.running(ray_python, caches, cache_dir() / "pythons", root) as cluster:
        yield cluster["address"], caches, cluster["temp"]


@pytest.fixture(scope="module")
def secured(ray_python, cluster, tmp_path_factory):
    """A cluster with token authentication, its token in its own temp dir: one node, sharing node_b's cache (the
    same machine; its builds are locked), so that it builds nothing the first cluster's tests built already."""
    _, caches, _ = cluster
    root = tmp_path_factory.mktemp("secured")
    with local_cluster.running(ray_python, {"node_s": caches["node_b"]}, cache_dir() / "pythons", root, "token") as up:
        yield up["address"], Path(up["token_file"])


def _gymgate(*args: str, timeout: float = 1500, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gymgate", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def _same(text: str) -> str:
    return VOLATILE.sub("…", text)


def test_a_matrix_sent_to_the_cluster_is_the_local_matrix(cluster, ray_python, tmp_path):
    address, caches, _ = cluster
    remote = ("--ray-address", address, "--ray-python", ray_python)
    there = _gymgate("matrix", *PINS, *MCQA, "--runs-dir", str(tmp_path / "r1"), "--out", str(tmp_path / "o1"), *remote)
    assert there.returncode == 0, there.stdout[-3000:] + there.stderr[-3000:]
    nodes = dict(re.findall(r"unit-(\S+)-a1: running on \S+ \(node (\w+)\)", there.stderr))  # progress
    assert sorted(nodes) == sorted(PINS) and len(set(nodes.values())) == 2  # one unit per node, at once
    for cache in caches.values():  # each node built gymgate and the one pin it ran, nothing else
        built = [p for p in (cache / "envs").iterdir() if p.is_dir()]
        assert len(built) == 1, built
    here = _gymgate("matrix", *PINS, *MCQA, "--runs-dir", str(tmp_path / "r2"), "--out", str(tmp_path / "o2"))
    assert here.returncode == there.returncode
    for report in ("matrix.md", "bumps/0.4.0-to-0.7.0/report.md", "bumps/0.4.0-to-0.7.0/retry.txt"):
        assert _same((tmp_path / "o1" / report).read_text()) == _same((tmp_path / "o2" / report).read_text()), report
    for pin in PINS:
        assert marked_pids(f"unit-{pin}-a1", UNIT_MARKER) == []


def _started_unit(address: str, ray_python: str, runs: Path, into_s: float = 10, **env: str) -> subprocess.Popen:
    """`accept 0.7.0 --env mcqa` sent to the cluster, `into_s` after its unit runs on its node (bounded)."""
    command = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", "0.7.0", "--no-baseline", *MCQA]
    command += ["--runs-dir", str(runs), "--ray-address", address, "--ray-python", ray_python]
    caller = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **env}
    )
    seen, deadline = [], time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([caller.stdout], [], [], 5)
        line = caller.stdout.readline() if ready else ""
        seen.append(line)
        if "running on" in line:
            time.sleep(into_s)  # into its run: Gyms starting on the node
            return caller
    caller.kill()
    pytest.fail("the unit never started: " + "".join(seen)[-2000:])


def _unjudged_and_gone(caller: subprocess.Popen, runs: Path, bound_s: float, code: int = EXIT_UNJUDGED) -> None:
    """The caller exits `code` within `bound_s` (3, unjudged; 130 when a person stopped it), its run is incomplete
    (never a verdict) and nothing of the unit runs."""
    stopped = time.monotonic()
    out, _ = caller.communicate(timeout=bound_s + 60)
    assert caller.returncode == code, out[-3000:]
    assert time.monotonic() - stopped < bound_s
    # The driver's stop signal reaches its own handler only, never Ray's failure handler (which logs a stack trace
    # from inside the signal handler: it hung a driver's stop under load).
    assert "SIGTERM received" not in out, out[-3000:]
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    mark = json.loads((run / "run.json").read_text())
    assert mark["complete"] is False and mark["incomplete"].startswith("on the cluster: "), mark
    deadline = time.monotonic() + 120  # a dead actor's reaper sweeps its unit within a second or two
    while left := marked_pids("unit-0.7.0-a1", UNIT_MARKER):
        assert time.monotonic() < deadline, "the unit still runs on its node: " + "; ".join(
            f"{pid} {_cmdline(Path('/proc', str(pid)))[:200]}" for pid in left
        )
        time.sleep(1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_caller_stops_every_unit_and_leaves_nothing_running(cluster, ray_python, tmp_path, signum):
    address, _, _ = cluster
    caller = _started_unit(address, ray_python, tmp_path)
    caller.send_signal(signum)
    _unjudged_and_gone(caller, tmp_path, 200, EXIT_INTERRUPTED)  # the stop deadline: each unit's grace, then its actor


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_mutant_sent_to_the_cluster_is_caught_exactly_as_here(cluster, ray_python, tmp_path):
    """The mutation suite's judge (tests/integration/mutation.py) on a bump whose baseline is a pin (resolved by name
    on its node) and whose candidate is a local tree (sent as a pack): exit 1, exactly mcqa's two paths regressed with
    Gym's ImportError, workplace_assistant same-pass with nothing changed, nothing left running."""
    address, _, _ = cluster
    mutant = mutation.MUTANTS["server-import-error"]
    gym = mutation.build_mutant(mutant, tmp_path / "gym")
    remote = ("--ray-address", address, "--ray-python", ray_python)
    mutation.judge_once(mutant, gym, tmp_path / "runs", tmp_path, *remote)


def test_a_load_mutant_sent_to_the_cluster_is_caught_exactly_as_here(cluster, ray_python, tmp_path):
    """`accept --load` on the cluster (issue 54): the acceptance units as above, then a load unit per environment —
    both refs on one node, interleaved there — whose record streams back and is merged and judged here: the mutant's
    zombie per rollout is exactly its finding, as tests/integration/test_load_mutants.py finds it on this machine,
    with nothing left running on either node."""
    address, _, _ = cluster
    mutant = load_mutants.MUTANTS["child-never-reaped"]
    gym = load_mutants.build(mutant, tmp_path / "gym")
    remote = ("--ray-address", address, "--ray-python", ray_python)
    done = load_mutants.accept_under_load(gym, mutant, tmp_path / "runs", *remote)
    record = load_mutants.judged(mutant, done)
    assert list(record["units"]) == ["load-1-mcqa"], record["units"]
    unit = record["units"]["load-1-mcqa"]
    assert unit["envs"] == ["mcqa"] and unit["ended"] == "unit-load-1-mcqa-a1 measured", unit
    for side in ("baseline", "candidate"):  # both refs' Gyms came up in that unit, on its one node
        assert unit[side]["ready"].get("paths", {}).get("mcqa"), unit[side]
        assert unit[side]["left_running"] == [], unit[side]
    said = done.stdout + done.stderr  # with --json, progress is on stderr
    assert re.search(r"unit-load-1-mcqa-a1: running on \S+ \(node \w+\)", said), said[-3000:]
    assert marked_pids("unit-load-1-mcqa-a1", UNIT_MARKER) == []


def _without_ray_auth(**env: str) -> dict[str, str]:
    """This process's environment with none of Ray's token settings, and `env`."""
    kept = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    return {**kept, **env}


def _everything_written(*roots: Path) -> bytes:
    return b"".join(p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file())


def test_a_matrix_joins_a_secured_cluster_with_the_users_token_and_never_shows_it(secured, ray_python, tmp_path):
    """The token in a file named by Ray's own RAY_AUTH_TOKEN_PATH (this suite's HOME holds another, in Ray's default
    file: Ray's order takes the one named)."""
    address, token_file = secured
    token = token_file.read_text().strip()
    remote = ("--ray-address", address, "--ray-python", ray_python)
    runs, out = tmp_path / "runs", tmp_path / "out"
    there = _gymgate(
        "matrix", "0.7.0", *MCQA, "--runs-dir", str(runs), "--out", str(out), *remote,
        env=_without_ray_auth(RAY_AUTH_TOKEN_PATH=str(token_file)),
    )  # fmt: skip
    assert there.returncode == 0, there.stdout[-3000:] + there.stderr[-3000:]
    assert re.search(r"unit-0\.7\.0-a1: running on \S+ \(node \w+\)", there.stderr), there.stderr[-3000:]
    assert token not in there.stdout + there.stderr
    assert token.encode() not in _everything_written(runs, out)
    assert marked_pids("unit-0.7.0-a1", UNIT_MARKER) == []


@pytest.mark.parametrize("given", ["wrong", "none"])
def test_a_secured_cluster_that_refuses_the_token_is_a_clear_usage_error(secured, ray_python, tmp_path, given):
    """Exit 2 at once, a message that says what to do, no traceback, nothing run, the run marked unjudged."""
    address, _ = secured
    wrong = "0123456789abcdef-not-the-clusters-token"
    env = _without_ray_auth(RAY_AUTH_TOKEN=wrong)
    if given == "none":  # a HOME with no Ray token either; gymgate's cache and interpreters where they are
        env = moved_home(tmp_path / "home")
    command = ["accept", "--gym-ref", "0.7.0", "--no-baseline", *MCQA, "--runs-dir", str(tmp_path / "runs")]
    started = time.monotonic()
    refused = _gymgate(*command, "--ray-address", address, "--ray-python", ray_python, timeout=300, env=env)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 2, said[-3000:]
    # Ray's own ray.init retries a refused token for 20 s and then only says it could not connect: gymgate asks first.
    assert time.monotonic() - started < 15, said[-3000:]
    assert f"the Ray cluster at {address} refused gymgate's connection" in said, said[-3000:]
    assert ("from $RAY_AUTH_TOKEN" if given == "wrong" else "no token was found") in said, said[-3000:]
    assert "Traceback" not in said and wrong not in said, said[-3000:]
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    mark = json.loads((run / "run.json").read_text())
    assert mark["complete"] is False and "refused gymgate's connection" in mark["incomplete"], mark


def test_a_cluster_lost_mid_run_is_never_a_verdict_and_leaves_nothing_running(cluster, ray_python, tmp_path):
    """Last in this file: it kills the cluster's GCS while a unit runs. The driver loses the cluster (Ray's reconnect
    bound, shortened here), the caller reports the run unjudged, and the unit's reaper sweeps it once its actor is
    gone; the fixture then kills what is left of the cluster."""
    address, _, temp = cluster
    runs = tmp_path / "runs"
    # At once, and a short bound: the driver must lose the cluster while the unit still runs (a warm node runs
    # mcqa in ~20 s, and an actor's calls go on without the GCS until the driver gives up on it).
    caller = _started_unit(address, ray_python, runs, 0, RAY_gcs_rpc_server_reconnect_timeout_s="5")
    (gcs,) = [
        int(proc.name)
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and "gcs_server" in _cmdline(proc) and temp in _cmdline(proc)
    ]
    os.kill(gcs, signal.SIGKILL)
    _unjudged_and_gone(caller, runs, 180)
