"""The run's own Ray cluster (services/ray_cluster.py), really started: the head leaves out the daemons and the API
server a run never uses, still runs an actor, and stops every process it started."""

from __future__ import annotations

import ray
from ray._private import ray_constants
from ray._private import worker as ray_worker
from ray._private.node import Node
from ray._private.parameter import RayParams

from gymgate.processes import alive
from gymgate.services.ray_cluster import private_ray


@ray.remote(num_cpus=0)
class Echo:
    def echo(self, value):
        return value


def test_the_runs_head_leaves_out_unused_daemons_runs_actors_and_stops_everything():
    init, api_server = RayParams.__init__, Node.start_api_server
    with private_ray("raytest", namespace="gymgate-raytest"):
        processes = ray_worker._global_node.all_processes
        kinds = set(processes)
        assert {ray_constants.PROCESS_TYPE_RAYLET, ray_constants.PROCESS_TYPE_GCS_SERVER} <= kinds
        unused = {ray_constants.PROCESS_TYPE_MONITOR, ray_constants.PROCESS_TYPE_LOG_MONITOR}
        assert not kinds & {*unused, ray_constants.PROCESS_TYPE_DASHBOARD}, kinds
        pids = [info.process.pid for infos in processes.values() for info in infos]
        assert ray.get(Echo.remote().echo.remote("answered"), timeout=120) == "answered"
    assert RayParams.__init__ is init and Node.start_api_server is api_server  # Ray's own again
    assert [pid for pid in pids if alive(pid)] == []
