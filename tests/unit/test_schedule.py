"""The xdist scheduler override (gymgate.session.schedule) against the pytest-xdist version the pins lock.

EnvScheduling overrides private methods of xdist's LoadScopeScheduling, so the pin environments declare a bounded
pytest-xdist range (envs/project.py TOOLING). These tests run the override through xdist's own scheduling code
(`schedule`, `mark_test_complete`, `remove_node`) with stand-in worker controllers, on that same version.
"""

from __future__ import annotations

import importlib.metadata
import tomllib

import pytest
from packaging.requirements import Requirement

from gymgate.envs.project import TOOLING
from gymgate.locations import envs_dir
from gymgate.session.owners import plan
from gymgate.session.schedule import EnvScheduling

ENVS = ["mcqa", "code_gen", "workplace_assistant"]
ITEMS = "src/gymgate/session/items.py::test_path"
COLLECTION = [f"{ITEMS}[{env}:{mode}]" for env in ENVS for mode in ("accepted", "rejected")]


def _xdist_range() -> Requirement:
    (spec,) = [Requirement(r) for r in TOOLING if Requirement(r).name == "pytest-xdist"]
    return spec


def test_the_pins_lock_a_bounded_xdist_and_these_tests_run_on_that_version():
    spec = _xdist_range()
    assert any(s.operator in ("<", "<=", "==", "~=") for s in spec.specifier), f"{spec} has no upper bound"
    installed = importlib.metadata.version("pytest-xdist")
    assert spec.specifier.contains(installed), f"pytest-xdist {installed} is outside {spec}"
    for lock in sorted(envs_dir().glob("*/uv.lock")):
        (locked,) = [p["version"] for p in tomllib.loads(lock.read_text())["package"] if p["name"] == "pytest-xdist"]
        assert locked == installed, f"{lock} locks pytest-xdist {locked}; the harness tests run {installed}"


class Node:
    """A stand-in for xdist's WorkerController: what the scheduler sends it is recorded."""

    def __init__(self, worker: str):
        self.gateway = type("Gateway", (), {"id": worker})()
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


class Config:
    class option:  # noqa: N801 - pytest's shape
        loadscopereorder = False

    def getvalue(self, name):
        return {"tx": ["2*popen"]}[name]


def _scheduler(workers: int, collection: list[str] = COLLECTION, costs=None) -> tuple[EnvScheduling, list[Node]]:
    scheduler = EnvScheduling(Config())
    if costs is not None:
        scheduler.costs = costs
    nodes = [Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, list(collection))
    assert scheduler.collection_is_completed
    scheduler.schedule()
    return scheduler, nodes


def _run(scheduler: EnvScheduling, node: Node) -> None:
    """The worker runs what it was sent, in order, including what it is sent on the way."""
    done = 0
    while done < len(node.sent):
        scheduler.mark_test_complete(node, node.sent[done])
        done += 1


def _sent_envs(node: Node, collection: list[str] = COLLECTION) -> set[str]:
    return {collection[i].split("[")[1].split(":")[0] for i in node.sent}


def test_each_environment_runs_on_the_worker_the_plan_names():
    scheduler, nodes = _scheduler(2)
    owners = plan(ENVS, 2)
    for node in nodes:
        assert _sent_envs(node) == {env for env, owner in owners.items() if owner == node.gateway.id}
    assert sorted(i for node in nodes for i in node.sent) == list(range(len(COLLECTION)))  # each path once
    for node in nodes:
        for index in list(node.sent):
            scheduler.mark_test_complete(node, index)
    assert scheduler.tests_finished and all(node.shutting_down for node in nodes)


def test_a_worker_handed_all_its_environments_is_told_so_while_the_other_still_has_some_queued():
    # An xdist worker runs a path only once it knows the next one or its end: told late, it would hold its last path
    # (and its Gyms) until the other worker had taken its last environment.
    envs = {"code_gen": 4.0, "equivalence_llm_judge": 3.0, "mcqa": 2.0, "workplace_assistant": 1.0}
    collection = [f"{ITEMS}[{env}:m{i}]" for env in envs for i in range(3)]
    scheduler, (first, second) = _scheduler(2, collection, costs=envs)
    assert plan(list(envs), 2, envs) == {
        "code_gen": "gw0",
        "equivalence_llm_judge": "gw1",
        "mcqa": "gw1",
        "workplace_assistant": "gw0",
    }
    _run(scheduler, first)  # gw0 runs code_gen, is handed workplace_assistant on the way, and runs that too
    assert _sent_envs(first, collection) == {"code_gen", "workplace_assistant"}
    assert list(scheduler.workqueue) == ["mcqa"]  # gw1's, still queued: gw0 will never be handed it
    assert first.shutting_down and not second.shutting_down
    _run(scheduler, second)
    assert _sent_envs(second, collection) == {"equivalence_llm_judge", "mcqa"}
    assert sorted(first.sent + second.sent) == list(range(len(collection)))  # each path once
    assert scheduler.tests_finished and second.shutting_down


def test_a_crashed_worker_loses_only_the_path_it_was_running():
    scheduler, (first, second) = _scheduler(2)
    crashed_on = COLLECTION[first.sent[0]]
    assert scheduler.remove_node(first) == crashed_on  # reported as crashed, never handed on to crash the next one
    # xdist starts a replacement worker: it gets the crashed worker's other paths, and only those.
    replacement = Node("gw2")
    scheduler.add_node(replacement)
    scheduler.add_node_collection(replacement, list(COLLECTION))
    scheduler.schedule()
    assert [COLLECTION[i] for i in replacement.sent] == [COLLECTION[i] for i in first.sent[1:]]
    for node in (second, replacement):
        for index in list(node.sent):
            scheduler.mark_test_complete(node, index)
    assert scheduler.tests_finished


@pytest.mark.parametrize("name", ["_split_scope", "_assign_work_unit", "_reschedule", "remove_node"])
def test_the_overridden_methods_exist_in_the_pinned_xdist(name):
    from xdist.scheduler import LoadScopeScheduling

    assert callable(getattr(LoadScopeScheduling, name, None)), f"xdist no longer has LoadScopeScheduling.{name}"
