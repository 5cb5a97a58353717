"""Waves: a worker keeps at most --max-envs (its share) Gyms up or starting, and starts the next as an earlier
environment's paths are done (session/worker.WorkerSession), with a fleet that starts nothing."""

from __future__ import annotations

from concurrent.futures import Future

from gymgate.outcomes import EnvState
from gymgate.runfolder import EnvStatus, RunFolder
from gymgate.session.worker import WorkerSession


class FakeFleet:
    """What WorkerSession asks of a Fleet, without Gyms: starts are immediate and ready."""

    def __init__(self):
        self.started: list[str] = []
        self.retired: list[str] = []
        self.statuses: dict[str, EnvStatus] = {}
        self.discarded: set[str] = set()

    def launch(self, gcs, on_status=None, names=None):
        futures = {}
        for name in names:
            self.started.append(name)
            self.statuses[name] = EnvStatus(name, EnvState.READY, seconds=1.0)
            on_status(self.statuses[name])
            futures[name] = Future()
            futures[name].set_result(None)
        return futures

    def retire(self, name, timeout_s):
        self.retired.append(name)
        return [name]


def test_gyms_start_in_waves_as_earlier_environments_finish(tmp_path):
    run = RunFolder(tmp_path)
    session = WorkerSession(run, "gw0", "127.0.0.1:1", [], "http://127.0.0.1:1/v1", max_live=2)
    session.fleet = fleet = FakeFleet()
    session.launch(["a", "b", "c", "d", "e"])
    assert fleet.started == ["a", "b"] and session.backlog == ["c", "d", "e"]
    session.done_with("a")  # the next starts, the finished one stops
    assert fleet.started == ["a", "b", "c"] and fleet.retired == ["a"]
    statuses = run.service_statuses()
    assert statuses["a"].status == EnvState.DONE and statuses["a"].wave == 1 and statuses["c"].wave == 2
    session.ensure("e")  # asked for before its wave: started at once, no longer waiting
    assert fleet.started[-1] == "e" and session.backlog == ["d"]
    session.done_with("b"), session.done_with("c")
    assert fleet.started == ["a", "b", "c", "e", "d"] and session.backlog == []
    session.done_with("d")  # nothing waits: its Gym is left for the session's end
    assert fleet.retired == ["a", "b"]  # c finished when nothing waited any more
    unbounded = WorkerSession(run, "gw1", "127.0.0.1:1", [], "http://127.0.0.1:1/v1")
    unbounded.fleet = FakeFleet()
    unbounded.launch(["a", "b", "c"])
    assert unbounded.fleet.started == ["a", "b", "c"] and unbounded.backlog == []


def test_a_shared_instance_makes_room_for_as_many_as_it_held_when_its_last_member_is_done(tmp_path):
    class SharedFleet(FakeFleet):
        def retire(self, name, timeout_s):
            self.retired.append(name)
            return [] if name == "a" else ["a", "b"]  # a and b share one instance

    session = WorkerSession(RunFolder(tmp_path), "gw0", "127.0.0.1:1", [], "http://127.0.0.1:1/v1", max_live=2)
    session.fleet = fleet = SharedFleet()
    session.launch(["a", "b", "c", "d", "e"])
    session.done_with("a")  # its neighbour still runs: nothing stopped, nothing starts
    assert fleet.started == ["a", "b"] and session.backlog == ["c", "d", "e"]
    session.done_with("b")
    assert fleet.started == ["a", "b", "c", "d"] and session.backlog == ["e"]


def test_neighbours_taken_down_with_a_shared_instance_start_again_at_once_together_unless_done(tmp_path):
    """A hang or a dead server tears a shared instance down: the neighbours that still have paths to run start again
    right away, together (no longer sent alone), not each when its first path comes; a neighbour whose paths have
    all run does not start again; the environment itself starts when its path asks."""

    class SharedFleet(FakeFleet):
        def __init__(self):
            super().__init__()
            self.alone: set[str] = set()
            self.launches: list[list[str]] = []

        def launch(self, gcs, on_status=None, names=None):
            self.launches.append(list(names))
            return super().launch(gcs, on_status, names)

        def readmit(self, members):
            self.discarded.difference_update(members)
            self.alone.difference_update(members)

        def discard(self, name, why, timeout_s):
            taken = sorted(set("abcd") - self.discarded)  # the one instance they shared, or what is left of it
            self.discarded.update(taken)
            self.alone.update(taken)
            return taken

    session = WorkerSession(RunFolder(tmp_path), "gw0", "127.0.0.1:1", [], "http://127.0.0.1:1/v1")
    session.fleet = fleet = SharedFleet()
    session.launch(["a", "b", "c", "d"])
    session.done_with("a")
    session.discard("b", "hung")
    assert fleet.launches[-1] == ["c", "d"]  # together, at once; a is done, b starts when its own path asks
    assert fleet.discarded == {"a", "b"} and fleet.alone == {"a", "b"}
    session.ensure("c")  # its new start is the one waited for, not a third
    assert fleet.launches[-1] == ["c", "d"]
    session.ensure("b")
    assert fleet.launches[-1] == ["b"] and "b" not in fleet.discarded
    session.done_with("b"), session.done_with("c")
    session.discard("d", "hung")  # a hang's tear-down with nothing left to run: nothing starts
    assert fleet.launches[-1] == ["b"]
