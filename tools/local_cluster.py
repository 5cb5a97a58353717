"""A multi-node Ray cluster on this machine, for the cluster tests and bench: `python tools/local_cluster.py SPEC.json`
with a Python that has Ray (not gymgate: a cluster's own Python knows nothing of it); `ray_python` makes one and
`running` starts the cluster and stops it. A head that runs no unit and one worker node
per entry of SPEC's "nodes" (each its own raylet, object store and workers, with its resources and environment:
its own gymgate cache), all on 127.0.0.2 (Ray rewrites 127.0.0.1 to the machine's own address; the rest of
127.0.0.0/8 is taken as given). Prints {"address": …} once every node is up; stops every node on SIGTERM or when
its stdin closes. It writes no /tmp/ray address file (another `ray.init()` on the machine would join it)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

LOOPBACK = "127.0.0.2"


def main(spec_file: str) -> int:
    import ray._private.utils
    from ray.cluster_utils import Cluster

    spec = json.loads(Path(spec_file).read_text())
    ray._private.utils.write_ray_address = lambda *args, **kwargs: None
    temp = tempfile.mkdtemp(prefix="ggcl-", dir="/tmp")  # short: Ray's socket paths
    loopback = {"node_ip_address": LOOPBACK, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "temp_dir": temp, **loopback})
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    try:
        for node in spec["nodes"]:
            cluster.add_node(
                num_cpus=node.get("num_cpus", 1), resources=node["resources"], env_vars=node["env"], **loopback
            )
        cluster.wait_for_nodes(timeout=120)
        print(json.dumps({"address": cluster.address, "temp": temp}), flush=True)
        stop.wait(timeout=3 * 3600)
    finally:
        with contextlib.suppress(Exception):  # a cluster whose GCS is gone cannot drain its nodes: `running` kills them
            cluster.shutdown()
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
def running(python: str, caches: dict[str, Path], builds: Path, root: Path) -> Iterator[dict[str, str]]:
    """A head and one node per entry of `caches` (one `gymgate` slot and that gymgate cache each; CPython copied
    from `builds`, as a node provides it); yields its `address` and `temp` dir; every node stopped on the way out,
    and whatever of the cluster outlives its stop (a cluster whose GCS was killed cannot stop itself) killed."""
    spec = {
        "nodes": [
            {
                "resources": {"gymgate": 1, name: 1},
                "env": {"GYMGATE_CACHE": str(cache), "GYMGATE_PYTHON_BUILDS": str(builds)},
            }
            for name, cache in caches.items()
        ]
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
        yield json.loads(head.stdout.readline())
    finally:
        head.stdin.close()  # its nodes stop; past the bound, or what outlives the head, its whole group goes
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=120)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
