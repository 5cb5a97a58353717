"""Fault injection at every step of a Gym actor's start and cleanup.

The Ray API and actor are fakes (the fault points are not reachable with a real Gym on demand), but
the "Gym process group" is a real process in its own session, so "nothing is left running" is checked
against the kernel, not against a flag.
"""

from __future__ import annotations

import subprocess

import pytest

from gymgate.processes import alive, kill_group, wait_gone
from gymgate.services import lifecycle
from gymgate.services.gym_actor import GymActor


class FakeGym:
    """Stands in for GymActor: identity() starts a real process group, shutdown() leaves it running."""

    def __init__(self, faults):
        self.faults = faults
        self.proc = None

    def identity(self):
        self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        return {"pid": self.proc.pid, "pgid": self.proc.pid}

    def _spinup(self, config):
        if "_spinup" in self.faults:
            raise self.faults["_spinup"]
        return [{"name": "mcqa", "host": "127.0.0.1", "port": 1}]

    def set_consumer(self, consumer):
        if "set_consumer" in self.faults:
            raise self.faults["set_consumer"]

    def shutdown(self):
        if "shutdown" in self.faults:
            raise self.faults["shutdown"]


class Ref:
    def __init__(self, label, fn):
        self.label, self.fn = label, fn


class Method:
    def __init__(self, handle, name):
        self.handle, self.name = handle, name

    def remote(self, *args):
        self.handle.calls.append(self.name + ".remote")
        fault = self.handle.faults.get(self.name + ".remote")
        if fault:
            raise fault
        return Ref(self.name, lambda: getattr(self.handle.obj, self.name)(*args))


class Handle:
    def __init__(self, obj, faults, calls):
        self.obj, self.faults, self.calls = obj, faults, calls

    def __getattr__(self, name):
        return Method(self, name)


class ActorClass:
    def __init__(self, faults, calls):
        self.faults, self.calls, self.created = faults, calls, []

    def options(self, **kwargs):
        return self

    def remote(self, *args):
        handle = Handle(FakeGym(self.faults), self.faults, self.calls)
        self.created.append(handle)
        return handle


class FakeRay:
    def __init__(self, faults, calls):
        self.faults, self.calls, self.timeouts = faults, calls, {}

    def get(self, ref, timeout=None):
        self.calls.append(f"get:{ref.label}")
        self.timeouts[ref.label] = timeout
        if ref.label == "shutdown" and "shutdown.get" in self.faults:
            raise self.faults["shutdown.get"]
        return ref.fn()

    def kill(self, actor, no_restart=False):
        self.calls.append("ray.kill")
        if "ray.kill" in self.faults:
            raise self.faults["ray.kill"]


def _start(faults):
    calls: list[str] = []
    ray, cls = FakeRay(faults, calls), ActorClass(faults, calls)
    try:
        handle = lifecycle.start_gym(ray, cls, "mcqa", (), {}, consumer=object(), spinup_timeout_s=5)
        return handle, None, calls, ray, cls
    except BaseException as exc:  # noqa: BLE001
        return None, exc, calls, ray, cls


def _group_gone(cls) -> bool:
    proc = cls.created[0].obj.proc
    gone = wait_gone(proc.pid, 5)
    proc.wait(timeout=5)
    return gone


ORIGINAL = RuntimeError("Process mcqa finished unexpectedly!")


@pytest.mark.parametrize(
    ("faults", "note_fragment"),
    [
        ({"_spinup": ORIGINAL}, None),
        ({"set_consumer": ORIGINAL}, None),
        ({"_spinup": ORIGINAL, "shutdown.remote": ConnectionError("actor gone")}, "shutdown.remote: ConnectionError"),
        ({"_spinup": ORIGINAL, "shutdown.get": TimeoutError("60 s")}, "shutdown ray.get: TimeoutError"),
        ({"_spinup": ORIGINAL, "shutdown": OSError("graceful failed")}, "shutdown ray.get: OSError"),
        ({"set_consumer": ORIGINAL, "ray.kill": ValueError("kill failed")}, "ray.kill: ValueError"),
    ],
)
def test_original_start_error_surfaces_and_nothing_is_left(faults, note_fragment):
    handle, exc, calls, ray, cls = _start(dict(faults))
    assert handle is None
    assert exc is ORIGINAL  # the very exception, not a wrapper or a cleanup error
    notes = getattr(exc, "__notes__", [])
    if note_fragment:
        assert any(note_fragment in n for n in notes), notes
    else:
        assert notes == []
    ORIGINAL.__notes__ = []
    assert "ray.kill" in calls  # always, whether graceful shutdown worked or not
    assert calls.index("shutdown.remote") < calls.index("ray.kill")
    assert ray.timeouts.get("shutdown", 0) <= 60 or "shutdown.remote" in faults
    assert _group_gone(cls)


def test_every_cleanup_step_failing_still_kills_the_group_and_keeps_the_original():
    faults = {"_spinup": ORIGINAL, "shutdown.remote": OSError("a"), "ray.kill": OSError("b")}
    handle, exc, calls, ray, cls = _start(faults)
    assert exc is ORIGINAL
    assert len(exc.__notes__) == 2
    ORIGINAL.__notes__ = []
    assert _group_gone(cls)


def test_interrupt_during_spinup_cleans_up_and_propagates():
    handle, exc, calls, ray, cls = _start({"_spinup": KeyboardInterrupt()})
    assert isinstance(exc, KeyboardInterrupt)
    assert "ray.kill" in calls
    assert _group_gone(cls)


def test_a_start_refused_after_the_actor_exists_still_kills_it():
    # Fleet.stop() may run while another thread's actor was just created: its registration is refused, and the
    # actor must not outlive the refusal.
    calls: list[str] = []
    ray, cls = FakeRay({}, calls), ActorClass({}, calls)
    refusal = RuntimeError("the run is stopping; this Gym will not be started")

    def refuse(handle):
        raise refusal

    with pytest.raises(RuntimeError) as info:
        lifecycle.start_gym(ray, cls, "mcqa", (), {}, consumer=object(), spinup_timeout_s=5, on_created=refuse)
    assert info.value is refusal
    assert "ray.kill" in calls and "get:_spinup" not in calls


def test_successful_start_then_teardown():
    handle, exc, calls, ray, cls = _start({})
    assert exc is None and handle.servers[0]["name"] == "mcqa"
    assert alive(handle.pid)
    assert lifecycle.teardown(ray, handle) == []
    assert ray.timeouts["shutdown"] == lifecycle.SHUTDOWN_TIMEOUT_S == 60
    assert _group_gone(cls)


def test_kill_group_refuses_our_own_group_and_init():
    import os

    assert kill_group(os.getpgrp()) is False
    assert kill_group(1) is False


class _Proc:
    def __init__(self):
        self.killed = False

    def kill(self):
        self.killed = True


class _HalfStarted:
    """A RunHelper whose start() died after spawning servers but before its head server existed."""

    def __init__(self):
        self._processes = {"mcqa": _Proc()}

    def shutdown(self):  # the real one would touch the missing head server
        raise AttributeError("_head_server")


def test_actor_shutdown_tolerates_partial_and_missing_run_helpers():
    actor = GymActor.__new__(GymActor)
    actor.env_name, actor.consumer = "mcqa", None
    actor.rh = None
    actor.shutdown()  # never spun up: a no-op
    actor.rh = type("Bare", (), {})()
    actor.shutdown()  # start() failed before the process table existed
    half = _HalfStarted()
    actor.rh = half
    actor.shutdown()
    assert half._processes["mcqa"].killed and actor.rh is None
    actor.shutdown()  # idempotent


@pytest.fixture(autouse=True)
def _quick_actor_exit(monkeypatch):
    # Fake actors never exit on ray.kill; do not wait the real grace for them.
    monkeypatch.setattr(lifecycle, "ACTOR_EXIT_WAIT_S", 0.05)
