"""Starting and stopping one Gym actor so that failure never leaves anything behind.

On a failed spin-up or consumer installation: attempt a graceful actor shutdown with a bounded wait,
always `ray.kill` the actor, always kill its process group, and re-raise the *original* exception,
with any cleanup failures attached as notes, never in its place. Stopping a healthy actor walks the
same steps. The Ray API and the group killer are parameters so unit tests can inject a fault at each step.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gymgate.options import default
from gymgate.processes import kill_group, wait_gone

SHUTDOWN_TIMEOUT_S = default("stop_timeout")  # Gym stops its children one at a time: ~3 s each at worst
IDENTITY_TIMEOUT_S = 120.0
ACTOR_EXIT_WAIT_S = 2.0


@dataclass
class GymHandle:
    env_name: str
    actor: Any
    pid: int | None = None
    pgid: int | None = None
    servers: list[dict[str, Any]] = field(default_factory=list)


def _step(errors: list[str], label: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except BaseException as exc:  # noqa: BLE001 - cleanup must run every step whatever one raises
        errors.append(f"{label}: {type(exc).__name__}: {exc}")
        return None


def teardown(
    ray_api: Any,
    handle: GymHandle,
    timeout_s: float = SHUTDOWN_TIMEOUT_S,
    killpg: Callable[[int, int], Any] = kill_group,
) -> list[str]:
    """Graceful shutdown (bounded), then ray.kill, then SIGKILL of the process group. Returns cleanup errors."""
    errors: list[str] = []
    ref = _step(errors, "shutdown.remote", lambda: handle.actor.shutdown.remote())
    if ref is not None:
        _step(errors, "shutdown ray.get", lambda: ray_api.get(ref, timeout=timeout_s))
    _step(errors, "ray.kill", lambda: ray_api.kill(handle.actor, no_restart=True))
    if handle.pid:
        wait_gone(handle.pid, ACTOR_EXIT_WAIT_S)  # let Ray see its own kill before the group goes
    if handle.pgid:
        _step(errors, "kill process group", lambda: killpg(handle.pgid, signal.SIGKILL))
    return errors


def start_gym(
    ray_api: Any,
    actor_cls: Any,
    env_name: str,
    actor_args: tuple[Any, ...],
    config: dict[str, Any],
    consumer: Any,
    spinup_timeout_s: float,
    shutdown_timeout_s: float = SHUTDOWN_TIMEOUT_S,
    killpg: Callable[[int, int], Any] = kill_group,
    actor_options: dict[str, Any] | None = None,
    on_created: Callable[[GymHandle], Any] | None = None,
) -> GymHandle:
    """A spun-up Gym actor with the consumer's actor-side half installed, or the original exception after full cleanup."""
    actor = actor_cls.options(**(actor_options or {})).remote(*actor_args)
    handle = GymHandle(env_name=env_name, actor=actor)
    try:
        if on_created is not None:
            on_created(handle)  # may refuse (the run is stopping): the actor exists, so it is torn down below
        identity = ray_api.get(actor.identity.remote(), timeout=IDENTITY_TIMEOUT_S)
        handle.pid, handle.pgid = identity["pid"], identity["pgid"]
        handle.servers = ray_api.get(actor._spinup.remote(config), timeout=spinup_timeout_s)
        ray_api.get(actor.set_consumer.remote(consumer), timeout=IDENTITY_TIMEOUT_S)
    except BaseException as exc:
        for error in teardown(ray_api, handle, shutdown_timeout_s, killpg):
            exc.add_note(f"cleanup after failed start of {env_name}: {error}")
        raise
    return handle
