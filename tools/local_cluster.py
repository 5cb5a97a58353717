"""A multi-node Ray cluster on this machine, for the cluster tests and bench: `python tools/local_cluster.py SPEC.json`
with a Python that has Ray (not gymgate: a cluster's own Python knows nothing of it); `ray_python` makes one and
`running` starts the cluster and stops it. A head that runs no unit and one worker node per entry of SPEC's
"nodes", each a `ray start --block` of its own (its own raylet, object store and workers, with its resources and
environment: its own gymgate cache), all on 127.0.0.2 (Ray rewrites 127.0.0.1 to the machine's own address; the rest of
127.0.0.0/8 is taken as given). Prints {"address": …} once every node is up; stops every node on SIGTERM or when
its stdin closes. It writes no /tmp/ray address file (another `ray.init()` on the machine would join it), and none
of the user's Ray state reaches it: no RAY_* variable of theirs, and RAY_AUTH_MODE set, so that Ray neither reads nor
writes ~/.ray/auth_token. SPEC's "auth": "token" starts it with token authentication instead, its token made for it
in its temp dir (printed as "token_file") and gone with it, as an operator secures a shared cluster."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

LOOPBACK = "127.0.0.2"
NODE_START_S = 120.0  # every node up and registered with the head
# How long a node's Ray processes try to reach a GCS that is gone before they exit (Ray's default: 60 s). A cluster
# whose GCS died (the cluster tests kill it) otherwise took a minute per node to stop: its raylets, told to stop,
# kept trying to reach it (the tests' teardown: 62 s; with 5 s here, 0.3 s and the lost-GCS test 27 s against 43).
GCS_GONE_S = "10"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def _ray_start(index: int, args: list[str], temp: str, env: dict[str, str]) -> subprocess.Popen:
    """One node: `ray start … --block` in a session of its own (its node's processes die with it on SIGTERM)."""
    command = [str(Path(sys.executable).parent / "ray"), "start", "--block", "--node-ip-address", LOOPBACK, *args]
    # Every port of the node chosen here, and each node started once the one before it is up: two raylets of one
    # machine choosing their own at once can choose the same (bind: Address already in use).
    ports = ("--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--metrics-export-port")
    ports += ("--node-manager-port", "--object-manager-port", "--runtime-env-agent-port")
    command += ["--disable-usage-stats", *(part for flag in ports for part in (flag, str(_free_port())))]
    environ = {**os.environ, **env, "RAY_TMPDIR": temp}  # no address file in /tmp/ray for others to find
    environ["RAY_gcs_rpc_server_reconnect_timeout_s"] = GCS_GONE_S
    with (Path(temp) / f"ray-start-{index}.log").open("ab") as log:
        return subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(address: str, head: subprocess.Popen, temp: str) -> None:
    """The head's GCS accepting connections (bounded; a head that exits is an error at once)."""
    host, port = address.split(":")
    deadline = time.monotonic() + NODE_START_S
    while time.monotonic() < deadline and head.poll() is None:
        with socket.socket() as probe, contextlib.suppress(OSError):
            probe.connect((host, int(port)))
            return
        time.sleep(0.5)
    raise RuntimeError(f"the head did not come up (logs: {temp}/ray-start-0.log)")


def _stop(nodes: list[subprocess.Popen]) -> None:
    for node in reversed(nodes):  # the workers first, the head last
        with contextlib.suppress(ProcessLookupError):
            node.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)  # whatever of its node outlived it
        node.wait(timeout=30)


def _own_ray_settings(auth: str, temp: str) -> dict[str, str]:
    """This process's Ray settings, which every node inherits: none of the user's RAY_* variables, and the cluster's
    own authentication (token: a fresh token in `temp`, Ray's RAY_AUTH_TOKEN_PATH naming it)."""
    for name in [name for name in os.environ if name.startswith("RAY_")]:
        del os.environ[name]
    if auth != "token":
        return {"RAY_AUTH_MODE": "disabled"}
    token = Path(temp) / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}


def main(spec_file: str) -> int:
    spec = json.loads(Path(spec_file).read_text())
    temp = tempfile.mkdtemp(prefix="ggcl-", dir="/tmp")  # short: Ray's socket paths
    settings = _own_ray_settings(spec.get("auth", ""), temp)
    os.environ.update(settings)  # before Ray is imported: it reads them once
    import ray

    stop = threading.Event()

    def on_sigterm() -> None:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())

    on_sigterm()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    port = _free_port()
    address = f"{LOOPBACK}:{port}"
    head = ["--head", "--port", str(port), "--num-cpus", "0", "--include-dashboard", "false", "--temp-dir", temp]
    head += ["--dashboard-port", str(_free_port())]  # its API server starts all the same, by default on 8265
    nodes = [_ray_start(0, head, temp, {})]
    try:
        _wait_for(address, nodes[0], temp)
        ray.init(address=address, _node_ip_address=LOOPBACK, logging_level="ERROR")
        for index, node in enumerate(spec["nodes"], 1):
            resources = ["--num-cpus", str(node.get("num_cpus", 1)), "--resources", json.dumps(node["resources"])]
            nodes.append(_ray_start(index, ["--address", address, *resources], temp, node["env"]))
            deadline = time.monotonic() + NODE_START_S
            while sum(1 for n in ray.nodes() if n["Alive"]) < len(nodes):
                if time.monotonic() > deadline or any(n.poll() is not None for n in nodes):
                    raise RuntimeError(f"node {index} did not come up within {NODE_START_S:g} s (logs: {temp})")
                time.sleep(0.5)
        ray.shutdown()
        on_sigterm()  # ray.init put Ray's own handler on SIGTERM, which ended this process with every node left running
        print(
            json.dumps({"address": address, "temp": temp, "token_file": settings.get("RAY_AUTH_TOKEN_PATH", "")}),
            flush=True,
        )
        stop.wait(timeout=3 * 3600)
    finally:
        _stop(nodes)
        shutil.rmtree(temp, ignore_errors=True)
    return 0


def ray_python(venv: Path, repo: Path) -> str:
    """A Python with the pins' Ray and nothing of gymgate (the cluster's, and the dispatch driver's), made by uv
    with the interpreter the pins use."""
    from gymgate.envs.python import select as interpreter

    lock = tomllib.loads((repo / "envs" / "0.7.0" / "uv.lock").read_text())
    ray = next(p["version"] for p in lock["package"] if p["name"] == "ray")
    python = interpreter(">=3.13.14", "the local cluster")
    for step in (
        ["uv", "venv", "-q", "-p", str(python.path), str(venv)],
        ["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"), f"ray=={ray}"],
    ):
        subprocess.run(step, check=True, timeout=900)
    return str(venv / "bin" / "python")


@contextlib.contextmanager
def running(python: str, caches: dict[str, Path], builds: Path, root: Path, auth: str = "") -> Iterator[dict[str, str]]:
    """A head and one node per entry of `caches` (one `gymgate` slot and that gymgate cache each; CPython copied
    from `builds`, as a node provides it); `auth` "token": with token authentication. Yields its `address`, `temp`
    dir and `token_file` (token auth only); every node stopped on the way out, and whatever of the cluster outlives
    its stop (a cluster whose GCS was killed cannot stop itself) killed."""
    spec = {
        "auth": auth,
        "nodes": [
            {
                "resources": {"gymgate": 1, name: 1},
                "env": {"GYMGATE_CACHE": str(cache), "GYMGATE_PYTHON_BUILDS": str(builds)},
            }
            for name, cache in caches.items()
        ],
    }
    (root / "cluster.json").write_text(json.dumps(spec))
    head = subprocess.Popen(
        [python, str(Path(__file__).resolve()), str(root / "cluster.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        ready, _, _ = select.select([head.stdout], [], [], 240)
        if not ready:
            raise TimeoutError("the local cluster did not come up within 240 s")
        said = head.stdout.readline()
        if not said:
            raise RuntimeError(
                f"the local cluster ended before it was up (exit {head.wait(timeout=60)}; its output above)"
            )
        yield json.loads(said)
    finally:
        head.stdin.close()  # its nodes stop; past the bound, or what outlives the head, its whole group goes
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=120)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
