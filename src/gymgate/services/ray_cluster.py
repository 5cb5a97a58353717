"""The run's own Ray cluster: started by the run, on loopback, with a short private temp dir.

It never attaches to another cluster (address="local"), and it exports its GCS address so that Gym's
servers join it explicitly (Gym's own `initialize_ray` returns early inside an actor without recording
an address, which would otherwise make each server start a cluster of its own).
"""

from __future__ import annotations

import inspect
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gymgate.processes import RUN_ENVIRONMENT, run_temp_dir, stop_together

OBJECT_STORE_BYTES = 256 * 1024 * 1024
# Ray starts one idle worker per CPU for the first driver, for tasks the run never submits: its Gym actors start
# workers of their own (their runtime_env), and Gym's servers that use Ray are served on demand.
SYSTEM_CONFIG = {"prestart_worker_first_driver": False}
# How long Ray's daemons get to stop on SIGTERM (Ray's own shutdown gives each 1 s, one after another): the raylet
# first, alone (it takes its workers and agents with it; measured 0.02-0.04 s), then the others together (GCS and
# dashboard measured within 0.13 s; the autoscaler's monitor, when one ran, often not within 4 s: it was killed).
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
    import ray.exceptions  # noqa: PLC0415 - pin environment only (Ray)

    kinds = tuple(getattr(ray.exceptions, name) for name in RAY_SYSTEM_FAILURES if hasattr(ray.exceptions, name))
    return isinstance(exc, kinds)


def unwrap(exc: BaseException) -> BaseException:
    """The exception a Ray task or actor method raised, out of the RayTaskError that carries it across (whose
    message leads with `ray::Actor.method() (pid=…, actor_id=…)`, saying nothing about why)."""
    import ray.exceptions  # noqa: PLC0415 - pin environment only (Ray)

    inner = getattr(exc, "cause", None) if isinstance(exc, ray.exceptions.RayTaskError) else None
    return inner if isinstance(inner, BaseException) else exc


def short_temp_dir(tag: str) -> Path:
    """A temp dir short enough for Ray's AF_UNIX socket paths (<=107 bytes), marked with the run's id."""
    return run_temp_dir(f"{tag[:6]}-")


# Daemons a head node starts that a run's cluster never uses: the autoscaler's monitor (a fixed one-node cluster)
# and the log monitor (it forwards workers' output to drivers, and every driver of a run says log_to_driver=False).
# `ray start` can leave both out (--no-monitor, --include-log-monitor=false); ray.init cannot, so the run's head is
# started with the same node parameters `ray start` would set. 0.7 CPU-s of every run (docs/benchmarks.md).
UNUSED_DAEMONS_OFF = {"no_monitor": True, "include_log_monitor": False}
# The head's API server (`dashboard.py`, started even with include_dashboard=False, for the job and state APIs and the
# dashboard): nothing of a run asks it anything (gymgate and Gym's servers are drivers and actors; no job is
# submitted, no state listed), so the run's head does not start it. 0.7 CPU-s of every run (docs/benchmarks.md).
UNUSED_HEAD_SERVER = "start_api_server"


@contextmanager
def _without_unused_daemons() -> Iterator[None]:
    """While the head starts: its node parameters leave out UNUSED_DAEMONS_OFF's daemons and the node does not start
    UNUSED_HEAD_SERVER. A Ray without either parameter, or without that method, starts as ray.init always does."""
    try:
        from ray._private.node import Node as node  # noqa: PLC0415 - pin environment only (Ray)
        from ray._private.parameter import RayParams as params  # noqa: PLC0415 - pin environment only (Ray)

        accepted = inspect.signature(params.__init__).parameters
    except (ImportError, TypeError, ValueError):
        yield
        return
    if not all(name in accepted for name in UNUSED_DAEMONS_OFF) or not callable(
        getattr(node, UNUSED_HEAD_SERVER, None)
    ):
        yield
        return
    original_init, original_server = params.__init__, getattr(node, UNUSED_HEAD_SERVER)

    def init(self, *args, **kwargs):
        original_init(self, *args, **{**kwargs, **UNUSED_DAEMONS_OFF})

    def no_api_server(self, *args, **kwargs) -> None:
        return None

    params.__init__ = init
    setattr(node, UNUSED_HEAD_SERVER, no_api_server)
    try:
        yield
    finally:
        params.__init__ = original_init
        setattr(node, UNUSED_HEAD_SERVER, original_server)


@contextmanager
def private_ray(run_id: str, namespace: str, num_cpus: int | None = None) -> Iterator[str]:
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    temp_dir = short_temp_dir(run_id)
    os.environ.update(RUN_ENVIRONMENT)
    os.environ.pop("RAY_ADDRESS", None)
    try:
        with _without_unused_daemons():
            _start_head(ray, namespace, num_cpus, temp_dir)
        gcs = ray.get_runtime_context().gcs_address
        os.environ["RAY_ADDRESS"] = gcs
        yield gcs
    finally:
        try:
            _shutdown(ray)
        finally:
            os.environ.pop("RAY_ADDRESS", None)
            shutil.rmtree(temp_dir, ignore_errors=True)


def _start_head(ray, namespace: str, num_cpus: int | None, temp_dir: Path) -> None:
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


def _shutdown(ray) -> None:
    """`ray.shutdown()` with the cluster's daemons stopped together once the raylet is gone: Ray stops them one
    after another, each with a 1 s grace (1.4 s of a run's otherwise idle end, docs/benchmarks.md). The driver
    disconnects first: a driver whose raylet dies while it is still connected exits. A Ray whose internals differ
    shuts down its own way."""
    from ray._private import worker as ray_worker  # noqa: PLC0415 - pin environment only (Ray)

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
