"""The run's own Ray cluster: started by the run, on loopback, with a short private temp dir.

It never attaches to another cluster (address="local"), and it exports its GCS address so that Gym's
servers join it explicitly (Gym's own `initialize_ray` returns early inside an actor without recording
an address, which would otherwise make each server start a cluster of its own).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gymgate.processes import RUN_ENVIRONMENT, stop_together

OBJECT_STORE_BYTES = 256 * 1024 * 1024
# Ray starts one idle worker per CPU for the first driver, for tasks the run never submits: its Gym actors start
# workers of their own (their runtime_env), and Gym's servers that use Ray are served on demand.
SYSTEM_CONFIG = {"prestart_worker_first_driver": False}
# How long Ray's daemons get to stop on SIGTERM (Ray's own shutdown gives each 1 s, one after another): the raylet
# first, alone (it takes its workers and agents with it; measured 0.02-0.04 s), then the others together (GCS, log
# monitor and dashboard measured within 0.13 s; the autoscaler's monitor often not within 4 s: it is killed).
RAYLET_STOP_S = 1.0
DAEMONS_STOP_S = 0.5


# Ray's own failures (the run's cluster, not Gym inside a healthy actor): a path or a start that ends in one of these
# is gymgate's fault (blame "harness").
RAY_SYSTEM_FAILURES = (
    "RaySystemError",
    "LocalRayletDiedError",
    "NodeDiedError",
    "ObjectStoreFullError",
    "OutOfDiskError",
    "RpcError",
    "AuthenticationError",
)


def is_ray_failure(exc: BaseException) -> bool:
    """`exc` is Ray itself failing (see RAY_SYSTEM_FAILURES)."""
    import ray.exceptions

    kinds = tuple(getattr(ray.exceptions, name) for name in RAY_SYSTEM_FAILURES if hasattr(ray.exceptions, name))
    return isinstance(exc, kinds)


def unwrap(exc: BaseException) -> BaseException:
    """The exception a Ray task or actor method raised, out of the RayTaskError that carries it across (whose
    message leads with `ray::Actor.method() (pid=…, actor_id=…)`, saying nothing about why)."""
    import ray.exceptions

    inner = getattr(exc, "cause", None) if isinstance(exc, ray.exceptions.RayTaskError) else None
    return inner if isinstance(inner, BaseException) else exc


def short_temp_dir(tag: str) -> Path:
    """A temp dir short enough for Ray's AF_UNIX socket paths (<=107 bytes)."""
    return Path(tempfile.mkdtemp(prefix=f"gg{tag[:6]}-", dir="/tmp"))


@contextmanager
def private_ray(run_id: str, namespace: str, num_cpus: int | None = None) -> Iterator[str]:
    import ray

    temp_dir = short_temp_dir(run_id)
    os.environ.update(RUN_ENVIRONMENT)
    os.environ.pop("RAY_ADDRESS", None)
    try:
        ray.init(
            address="local",
            namespace=namespace,
            num_cpus=num_cpus or os.cpu_count() or 2,
            include_dashboard=False,
            _temp_dir=str(temp_dir),
            _node_ip_address="127.0.0.1",
            object_store_memory=OBJECT_STORE_BYTES,
            _system_config=SYSTEM_CONFIG,
            log_to_driver=False,
            configure_logging=False,
        )
        gcs = ray.get_runtime_context().gcs_address
        os.environ["RAY_ADDRESS"] = gcs
        yield gcs
    finally:
        try:
            _shutdown(ray)
        finally:
            os.environ.pop("RAY_ADDRESS", None)
            shutil.rmtree(temp_dir, ignore_errors=True)


def _shutdown(ray) -> None:
    """`ray.shutdown()` with the cluster's daemons stopped together once the raylet is gone: Ray stops them one
    after another, each with a 1 s grace (1.4 s of a run's otherwise idle end, docs/benchmarks.md). The driver
    disconnects first: a driver whose raylet dies while it is still connected exits. A Ray whose internals differ
    shuts down its own way."""
    from ray._private import worker as ray_worker

    node = getattr(ray_worker, "_global_node", None)
    try:
        daemons = {kind: [info.process.pid for info in infos] for kind, infos in node.all_processes.items()}
    except AttributeError:
        daemons = {}
    if not daemons:
        ray.shutdown()
        return
    ray_worker._global_node = None  # ray.shutdown() then only disconnects this driver
    try:
        ray.shutdown()
    finally:
        raylets = daemons.pop("raylet", [])
        stop_together(raylets, RAYLET_STOP_S)
        stop_together([pid for pids in daemons.values() for pid in pids], DAEMONS_STOP_S)
