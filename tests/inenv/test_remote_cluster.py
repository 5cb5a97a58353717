"""A dispatch on a real multi-node Ray cluster on this machine (ray.cluster_utils: a head that runs no unit and two
worker nodes, each with one `gymgate` slot and a cache of its own), with a stand-in for gymgate as the unit's
command: units land on different nodes, each node materialises only what its own unit needed, run folders come back
as they are written, and after a normal end and after a stop nothing of any unit keeps running."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from gymgate.processes import marked_pids  # noqa: E402
from gymgate.remote import dispatch, node  # noqa: E402
from gymgate.remote.plan import Unit  # noqa: E402

# Loopback, and not 127.0.0.1: Ray rewrites that address to the machine's own when a driver connects (Ray's
# resolve_ip_for_localhost), while the rest of 127.0.0.0/8 is taken as given. Nothing listens beyond this machine.
LOOPBACK = "127.0.0.2"

STAND_IN = """
import os, subprocess, sys, time
from pathlib import Path
args = sys.argv[1:]
ref, runs = args[args.index("--gym-ref") + 1], Path(args[args.index("--runs-dir") + 1])
run = runs / f"run-{ref}"
(run / "paths").mkdir(parents=True)
(run / "run.json").write_text('{"ref": "%s", "ray": "%s"}' % (ref, os.environ.get("RAY_ADDRESS", "")))
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)  # a "Gym"
(run / "paths" / "mcqa-accepted.json").write_text('{"outcome": "PASS", "ref": "%s"}' % ref)
time.sleep(float(os.environ.get("GYMGATE_STAND_IN_SLEEP", "1")))
(run / "paths" / "mcqa-rejected.json").write_text('{"outcome": "PASS"}')
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    loopback = {"node_ip_address": LOOPBACK, "include_dashboard": False}
    temp = tempfile.mkdtemp(prefix="ggrc-", dir="/tmp")  # short: Ray's socket paths
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "temp_dir": temp, **loopback})
    caches = {}
    for name in ("node_a", "node_b"):
        caches[name] = root / f"cache-{name}"
        cache = {"GYMGATE_CACHE": str(caches[name])}
        made.add_node(num_cpus=1, resources={"gymgate": 1, name: 1}, env_vars=cache, **loopback)
    made.wait_for_nodes()
    ray.init(address=made.address, namespace=dispatch.namespace(), _node_ip_address=LOOPBACK)
    yield made, caches, root
    ray.shutdown()
    made.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def _checkout(root: Path) -> tuple[str, bytes]:
    tree = root / "checkout"
    (tree / "tools").mkdir(parents=True, exist_ok=True)
    (tree / "tools" / "stand_in.py").write_text(STAND_IN)
    return node.pack(tree, ["tools/stand_in.py"])


def _run(cluster, units, sleep: str, stopping=lambda: False):
    _, _, root = cluster
    digest, blob = _checkout(root)
    mirror = root / f"mirror-{time.monotonic_ns()}"
    command = [sys.executable, "tools/stand_in.py"]
    done = dispatch.run_units(
        units,
        (digest, blob),
        ["--env", "mcqa"],
        lambda unit: mirror / unit.name,
        cache="",
        scratch=str(root / "scratch"),
        command=command,
        stopping=stopping,
        environ={"GYMGATE_STAND_IN_SLEEP": sleep},
    )
    return done, mirror, digest


def test_units_land_on_different_nodes_and_their_runs_come_back(cluster):
    _, caches, _ = cluster
    done, mirror, digest = _run(cluster, [Unit("0.4.0"), Unit("0.7.0")], sleep="3")
    assert done.outcomes == {"unit-0.4.0-a1": dispatch.DONE, "unit-0.7.0-a1": dispatch.DONE}
    assert done.codes == {"unit-0.4.0-a1": 0, "unit-0.7.0-a1": 0}
    assert len(set(done.nodes.values())) == 2  # one slot per node: the two ran at once, on different nodes
    for ref in ("0.4.0", "0.7.0"):
        run = mirror / f"unit-{ref}-a1" / f"run-{ref}"
        assert sorted(p.name for p in (run / "paths").iterdir()) == ["mcqa-accepted.json", "mcqa-rejected.json"]
        assert '"ray": ""' in (run / "run.json").read_text()  # the outer cluster's address never reached it
    for cache in caches.values():  # each node unpacked the checkout into its own cache
        assert (cache / node.CHECKOUTS / digest / node.COMPLETE).is_file()
    assert marked_pids("unit-0.4.0-a1", node.UNIT_MARKER) == []
    assert marked_pids("unit-0.7.0-a1", node.UNIT_MARKER) == []


def test_a_stop_reaches_every_unit_and_leaves_nothing_running(cluster):
    _, _, root = cluster
    seen = []

    def stopping() -> bool:
        seen.append(time.monotonic())
        return len(list(root.glob("mirror-*/unit-0.5.0-a1/*/paths/mcqa-accepted.json"))) > 0

    started = time.monotonic()
    done, _, _ = _run(cluster, [Unit("0.5.0"), Unit("0.6.0")], sleep="600", stopping=stopping)
    assert time.monotonic() - started < 120
    assert set(done.outcomes.values()) == {dispatch.STOPPED}
    assert marked_pids("unit-0.5.0-a1", node.UNIT_MARKER) == []
    assert marked_pids("unit-0.6.0-a1", node.UNIT_MARKER) == []
    assert not ray.util.list_named_actors()  # nothing of the dispatch is left in its namespace
