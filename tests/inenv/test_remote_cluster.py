"""A dispatch on a real multi-node Ray cluster on this machine (ray.cluster_utils: a head that runs no unit and two
worker nodes, each with one `gymgate` slot and a cache of its own), with a stand-in for gymgate as the unit's
command: units land on different nodes, each node materialises only what its own unit needed, run folders come back
as they are written, and after a normal end and after a stop nothing of any unit keeps running."""

from __future__ import annotations

import json
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
from gymgate.remote.units import Unit  # noqa: E402

# Loopback, and not 127.0.0.1: Ray rewrites that address to the machine's own when a driver connects (Ray's
# resolve_ip_for_localhost), while the rest of 127.0.0.0/8 is taken as given. Nothing listens beyond this machine.
LOOPBACK = "127.0.0.2"

STAND_IN = """
import json, os, subprocess, sys, time
from pathlib import Path
args = sys.argv[1:]
assert args[0] == "unit"
ref, run = json.loads(Path(args[1]).read_text())["ref"], Path(args[args.index("--run-dir") + 1])
(run / "paths").mkdir(parents=True)
(run / "spec.json").write_text(Path(args[1]).read_text())  # as the node filled it in
(run / "run.json").write_text('{"ref": "%s", "ray": "%s", "cache": "%s"}' % (
    ref, os.environ.get("RAY_ADDRESS", ""), os.environ.get("GYMGATE_CACHE", "")))
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)  # a "Gym"
(run / "paths" / "mcqa-accepted.json").write_text('{"outcome": "PASS", "ref": "%s"}' % ref)
time.sleep(float(os.environ.get("GYMGATE_STAND_IN_SLEEP", "1")))
(run / "paths" / "mcqa-rejected.json").write_text('{"outcome": "PASS"}')
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    loopback = {"node_ip_address": LOOPBACK, "include_dashboard": False}  # nothing listens beyond this machine
    temp = tempfile.mkdtemp(prefix="ggrc-", dir="/tmp")  # short: Ray's socket paths
    with pytest.MonkeyPatch.context() as patch:  # Ray's test cluster writes its address into /tmp/ray for every
        # `ray.init()` on the machine to find: another user's work would join ours. Nothing here needs it.
        patch.setattr(ray._private.utils, "write_ray_address", lambda *args, **kwargs: None)
        made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "temp_dir": temp, **loopback})
    caches = {}
    for name in ("node_a", "node_b"):
        caches[name] = root / f"cache-{name}"
        _add(made, name, caches[name])
    made.wait_for_nodes()
    ray.init(address=made.address, namespace=dispatch.namespace(), _node_ip_address=LOOPBACK)
    yield made, caches, root
    ray.shutdown()
    made.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def _add(made, name: str, cache: Path):
    """A worker node with one unit slot, its own cache, on loopback."""
    env = {"GYMGATE_CACHE": str(cache)}
    return made.add_node(
        num_cpus=1,
        resources={"gymgate": 1, name: 1},
        env_vars=env,
        node_ip_address=LOOPBACK,
        include_dashboard=False,
    )


def _unit(ref: str) -> Unit:
    return Unit(ref, {"ref": ref})  # the stand-in reads the ref from its spec


def _checkout(root: Path) -> tuple[str, bytes]:
    tree = root / "checkout"
    (tree / "tools").mkdir(parents=True, exist_ok=True)
    (tree / "tools" / "stand_in.py").write_text(STAND_IN)
    return node.pack(tree, ["tools/stand_in.py"])


def _run(cluster, units, sleep: str, stopping=lambda: False, sources=None):
    _, _, root = cluster
    digest, blob = _checkout(root)
    mirror = root / f"mirror-{time.monotonic_ns()}"
    command = [sys.executable, "tools/stand_in.py"]
    done = dispatch.run_units(
        units,
        (digest, blob),
        lambda unit: mirror / unit.label,
        cache="",
        scratch=str(root / "scratch"),
        program=command,
        stopping=stopping,
        sources=sources,
        environ={"GYMGATE_STAND_IN_SLEEP": sleep},
    )
    return done, mirror, digest


def test_units_land_on_different_nodes_and_their_runs_come_back(cluster):
    _, caches, _ = cluster
    done, mirror, digest = _run(cluster, [_unit("0.4.0"), _unit("0.7.0")], sleep="3")
    assert done.outcomes == {"unit-0.4.0-a1": dispatch.DONE, "unit-0.7.0-a1": dispatch.DONE}
    assert done.codes == {"unit-0.4.0-a1": 0, "unit-0.7.0-a1": 0}
    assert len(set(done.nodes.values())) == 2  # one slot per node: the two ran at once, on different nodes
    for ref in ("0.4.0", "0.7.0"):
        run = mirror / ref
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
        return len(list(root.glob("mirror-*/0.5.0/paths/mcqa-accepted.json"))) > 0

    started = time.monotonic()
    done, _, _ = _run(cluster, [_unit("0.5.0"), _unit("0.6.0")], sleep="600", stopping=stopping)
    assert time.monotonic() - started < 120
    assert set(done.outcomes.values()) == {dispatch.STOPPED}
    assert marked_pids("unit-0.5.0-a1", node.UNIT_MARKER) == []
    assert marked_pids("unit-0.6.0-a1", node.UNIT_MARKER) == []
    assert not ray.util.list_named_actors()  # nothing of the dispatch is left in its namespace


SECOND_DRIVER = """
import json, sys
import ray
from gymgate.remote import dispatch
from gymgate.remote.units import Unit
address, root, digest, pack, out, loopback = sys.argv[1:7]
ray.init(address=address, namespace=dispatch.namespace(), _node_ip_address=loopback)
done = dispatch.run_units(
    [Unit("0.2.1", {"ref": "0.2.1"})], (digest, open(pack, "rb").read()),
    lambda unit: __import__("pathlib").Path(out) / unit.label,
    scratch=root + "/scratch2", program=[sys.executable, "tools/stand_in.py"], environ={"GYMGATE_STAND_IN_SLEEP": "12"},
)
print(json.dumps({"outcomes": done.outcomes, "codes": done.codes}))
"""


def test_two_dispatches_on_one_cluster_neither_see_nor_stop_each_other(cluster):
    import json
    import os
    import subprocess

    made, _, root = cluster
    digest, blob = _checkout(root)
    pack = root / "pack.tar.gz"
    pack.write_bytes(blob)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SECOND_DRIVER,
            made.address,
            str(root),
            digest,
            str(pack),
            str(root / "other"),
            LOOPBACK,
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    seen = []

    def stopping() -> bool:  # ours stops once the other's unit and ours both run
        seen.append(sorted(ray.util.list_named_actors()))
        theirs = list((root / "other").glob("0.2.1/paths/mcqa-accepted.json"))
        ours = list(root.glob("mirror-*/0.2.0/paths/mcqa-accepted.json"))
        return bool(theirs and ours)

    done, _, _ = _run(cluster, [_unit("0.2.0")], sleep="600", stopping=stopping)
    assert done.outcomes == {"unit-0.2.0-a1": dispatch.STOPPED}
    assert all(names == ["unit-0.2.0-a1"] for names in seen if names)  # the other dispatch's unit is not in view
    assert marked_pids("unit-0.2.1-a1", node.UNIT_MARKER)  # ours stopped; theirs still runs
    out, _ = other.communicate(timeout=180)
    assert json.loads(out.strip().splitlines()[-1]) == {
        "outcomes": {"unit-0.2.1-a1": dispatch.DONE},
        "codes": {"unit-0.2.1-a1": 0},
    }
    assert marked_pids("unit-0.2.1-a1", node.UNIT_MARKER) == []


def test_a_unit_whose_node_dies_runs_again_on_another_node(cluster):
    """Last in this file: it takes a node away (and adds one back)."""
    import json
    import threading

    made, _, root = cluster
    _add(made, "node_c", root / "cache-node_c")  # room for the unit to run again
    made.wait_for_nodes()
    killed = []

    def kill_its_node():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for run in root.glob("mirror-*/0.3.0/run.json"):
                cache = json.loads(run.read_text())["cache"]
                victim = next(w for w in made.worker_nodes if w.node_id == _node_of(cache))
                made.remove_node(victim, allow_graceful=False)
                killed.append(cache)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_its_node)
    killer.start()
    done, mirror, _ = _run(cluster, [_unit("0.3.0")], sleep="6")
    killer.join(timeout=90)
    assert killed, "the unit's node was never found"
    assert done.outcomes == {"unit-0.3.0-a2": dispatch.DONE} and "ran again as unit-0.3.0-a2" in done.reasons.get(
        "unit-0.3.0-a1", ""
    )
    assert (mirror / "0.3.0" / "paths" / "mcqa-rejected.json").is_file()
    _wait_gone("unit-0.3.0-a1")  # the dead node's unit: its reaper swept it
    assert marked_pids("unit-0.3.0-a2", node.UNIT_MARKER) == []


def _node_of(cache: str) -> str:
    """The node id whose workers see this cache (each node's GYMGATE_CACHE is its own)."""
    for entry in ray.nodes():
        if entry["Alive"] and any(Path(cache).name.endswith(r) for r in entry["Resources"] if r.startswith("node_")):
            return entry["NodeID"]
    raise AssertionError(f"no live node for {cache}")


def _wait_gone(unit_id: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while marked_pids(unit_id, node.UNIT_MARKER):
        assert time.monotonic() < deadline, f"{unit_id}: still running after its node died"
        time.sleep(0.2)


def test_a_load_unit_gets_both_its_refs_packs_unpacked_on_its_node(cluster, tmp_path):
    """A load unit (both refs on one node) whose two refs travel as packs: each side's spec names where its pack
    was unpacked on that node, with the pack's files; a run of one ref still gets its one pack."""
    packs = {}
    for side in ("baseline", "candidate"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "app.py").write_text(f"SIDE = {side!r}\n")
        packs[side] = node.pack(tmp_path / side, ["app.py"])
    spec = {"ref": "load", "sides": {s: {"payload": packs[s][0]} for s in packs}}
    one = {"ref": "tree", "payload": packs["baseline"][0]}
    sources = dict(packs.values())
    done, mirror, _ = _run(cluster, [Unit("load", spec), Unit("tree", one)], sleep="0", sources=sources)
    assert done.outcomes == {"unit-load-a1": dispatch.DONE, "unit-tree-a1": dispatch.DONE}, done.reasons
    filled = json.loads((mirror / "load" / "spec.json").read_text())
    for side, run in filled["sides"].items():
        assert (Path(run["source_path"]) / "app.py").read_text() == f"SIDE = {side!r}\n"
    tree = json.loads((mirror / "tree" / "spec.json").read_text())
    assert (Path(tree["source_path"]) / "app.py").read_text() == "SIDE = 'baseline'\n"
