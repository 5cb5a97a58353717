"""Environments sharing one Gym instance (services/sharing.py) inside a Fleet whose actors are fakes: a shared start
that fails starts each member alone, a torn-down instance sends each member alone, a dead server is its own
environment's, and a shared instance stops with its last member."""

from __future__ import annotations

import threading

import pytest

from gymgate.cases.named import load_environments
from gymgate.outcomes import EnvState
from gymgate.runfolder import RunFolder
from gymgate.services import fleet as fleet_module
from gymgate.services import lifecycle
from gymgate.services.fleet import Fleet

NAMES = ["mcqa", "workplace_assistant"]
BROKEN = "workplace_assistant"  # its start fails whenever it is in the instance


class Gyms:
    """Stands in for the Gym actors: records each start (its members) and each teardown."""

    def __init__(self, broken: str = ""):
        self.broken, self.starts, self.teardowns = broken, [], []
        self.lock = threading.Lock()

    def start(self, fleet, instance, gcs, lease, generation):
        with self.lock:
            self.starts.append(list(instance.members))
        handle = lifecycle.GymHandle(env_name=instance.key, actor=object())
        fleet._register(instance, handle)
        if self.broken in instance.members:
            with fleet._lock:
                for member in instance.members:
                    fleet.handles.pop(member, None)
            raise RuntimeError(f"{self.broken}: its server did not import")
        names = [name for member in instance.members for name in sorted(instance.own[member])]
        own = [{"name": name, "pid": 1, "host": "127.0.0.1", "port": 1} for name in names]
        handle.servers = [*own, {"name": "policy_model", "pid": 1}, {"name": "head_server", "pid": 1}]
        return handle


@pytest.fixture
def gyms(monkeypatch):
    made = Gyms()
    monkeypatch.setenv("GYMGATE_LAUNCHER", "exec")
    monkeypatch.setattr(Fleet, "_start_actor", lambda self, *a: made.start(self, *a))
    monkeypatch.setattr(fleet_module, "probe", lambda server: 200)
    monkeypatch.setattr(lifecycle, "teardown", lambda ray, handle, timeout_s: made.teardowns.append(handle) or [])
    return made


def fleet_of(tmp_path, share: int = 2) -> Fleet:
    return Fleet(RunFolder(tmp_path), load_environments(NAMES), lambda members: "http://127.0.0.1:1/v1", share=share)


def launch(fleet: Fleet, names=None) -> None:
    for future in fleet.launch("127.0.0.1:1", names=names).values():
        future.result(timeout=30)


def test_the_environments_share_one_instance_and_each_sees_its_own_servers(gyms, tmp_path):
    fleet = fleet_of(tmp_path)
    launch(fleet)
    assert gyms.starts == [NAMES]
    assert {n: fleet.statuses[n].status for n in NAMES} == dict.fromkeys(NAMES, EnvState.READY)
    assert {fleet.statuses[n].instance for n in NAMES} == {"mcqa+1"}
    mcqa = {s["name"] for s in fleet.statuses["mcqa"].servers}
    assert "mcqa" in mcqa and "policy_model" in mcqa and not any(n.startswith("workplace") for n in mcqa)
    assert fleet.handles["mcqa"] is fleet.handles["workplace_assistant"] and fleet.shared("mcqa") == "mcqa+1"
    assert (tmp_path / "logs" / "mcqa.log").resolve() == (tmp_path / "logs" / "mcqa+1.log").resolve()


def test_a_shared_start_that_fails_starts_each_member_alone(gyms, tmp_path):
    gyms.broken = BROKEN
    fleet = fleet_of(tmp_path)
    launch(fleet)
    assert gyms.starts[0] == NAMES and sorted(gyms.starts[1:]) == [["mcqa"], [BROKEN]]
    assert fleet.statuses["mcqa"].status == EnvState.READY and fleet.statuses["mcqa"].instance is None
    assert fleet.statuses[BROKEN].status == EnvState.FAILED
    assert "its server did not import" in fleet.statuses[BROKEN].reason
    assert not (tmp_path / "logs" / "mcqa.log").is_symlink()  # alone, it writes a log of its own


def test_a_torn_down_instance_sends_every_member_alone_and_stops_once(gyms, tmp_path):
    fleet = fleet_of(tmp_path)
    launch(fleet)
    fleet.discard(BROKEN, "its server died")
    assert len(gyms.teardowns) == 1 and fleet.handles == {}
    assert fleet.discarded == set(NAMES) and fleet.alone == set(NAMES)
    assert fleet.statuses[BROKEN].status == EnvState.FAILED and fleet.statuses["mcqa"].status == EnvState.READY
    launch(fleet, ["mcqa", BROKEN])  # their next paths: each in an instance of its own
    assert sorted(gyms.starts[1:]) == [["mcqa"], [BROKEN]] and not fleet.shared("mcqa")


def test_a_dead_server_is_its_own_environments_and_a_shared_one_everyones(gyms, tmp_path, monkeypatch):
    fleet = fleet_of(tmp_path)
    launch(fleet)
    dead = {"workplace_assistant"}
    for server in fleet.handles["mcqa"].servers:
        server["pid"] = 2 if server["name"] in dead else 1
    monkeypatch.setattr(fleet_module, "alive", lambda pid: pid != 2)
    assert fleet.watch("mcqa") == "" and "workplace_assistant" in fleet.watch(BROKEN)
    dead.add("policy_model")
    for server in fleet.handles["mcqa"].servers:
        server["pid"] = 2 if server["name"] in dead else 1
    assert "policy_model" in fleet.watch("mcqa")


def test_a_shared_instance_stops_with_its_last_member(gyms, tmp_path):
    fleet = fleet_of(tmp_path)
    launch(fleet)
    fleet.retire("mcqa")
    assert gyms.teardowns == [] and fleet.shared(BROKEN)
    fleet.retire(BROKEN)
    assert len(gyms.teardowns) == 1 and fleet.handles == {}
    fleet.stop()
    assert len(gyms.teardowns) == 1


def test_alone_is_gyms_own_way(gyms, tmp_path):
    fleet = fleet_of(tmp_path, share=1)
    launch(fleet)
    assert sorted(gyms.starts) == [["mcqa"], [BROKEN]] and not fleet.shared("mcqa")
    fleet.stop()
    assert len(gyms.teardowns) == 2


def test_an_isolated_member_starts_alone_and_its_neighbours_keep_the_instance(gyms, tmp_path):
    """An attempt that erred in a shared instance left its servers alive: the environment's next start is alone, and
    the instance goes on serving the neighbours (no teardown, no restart of theirs); it stops with its last member
    still in it, and the run's end stops each instance once."""
    fleet = fleet_of(tmp_path)
    launch(fleet)
    shared = fleet.handles["mcqa"]
    assert fleet.isolate(BROKEN) and not fleet.isolate(BROKEN)  # a second call: no longer shared
    assert gyms.teardowns == [] and fleet.handles == {"mcqa": shared} and fleet.shared("mcqa") == "mcqa+1"
    assert fleet.discarded == {BROKEN} and fleet.alone == {BROKEN}
    launch(fleet, [BROKEN])
    assert gyms.starts[1:] == [[BROKEN]] and not fleet.shared(BROKEN)
    assert fleet.statuses[BROKEN].instance is None and fleet.statuses["mcqa"].instance == "mcqa+1"
    fleet.retire("mcqa")  # the shared instance's last member still in it
    assert gyms.teardowns == [shared] and set(fleet.handles) == {BROKEN}
    fleet.stop()
    assert len(gyms.teardowns) == 2 and gyms.teardowns[1] is not shared


def test_readmitted_members_of_a_torn_down_instance_share_again(gyms, tmp_path):
    """The neighbours a teardown took down that ran no path in it start again together (WorkerSession), sharing an
    instance as they first did — not alone, as the environment the instance was torn down for goes."""
    fleet = fleet_of(tmp_path)
    launch(fleet)
    fleet.discard(BROKEN, "its server died")
    fleet.readmit(NAMES)
    assert fleet.discarded == set() and fleet.alone == set()
    launch(fleet)
    assert gyms.starts[1:] == [NAMES] and fleet.shared("mcqa") == "mcqa+1"
