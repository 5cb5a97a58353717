"""A multi-node Ray cluster on this machine for the cluster tests: `python tests/cluster.py SPEC.json` with a Python
that has Ray (not gymgate: a cluster's own Python knows nothing of it). A head that runs no unit and one worker node
per entry of SPEC's "nodes" (each its own raylet, object store and workers, with its resources and environment:
its own gymgate cache), all on 127.0.0.2 (Ray rewrites 127.0.0.1 to the machine's own address; the rest of
127.0.0.0/8 is taken as given). Prints {"address": …} once every node is up; stops every node on SIGTERM or when
its stdin closes. It writes no /tmp/ray address file (another `ray.init()` on the machine would join it)."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import threading
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
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
