"""A unit is one run of one ref as data (gymgate/remote/units.py, remote/unit_spec.py): it travels as JSON, its name is
readable, and its spec is exactly the `run_ref` call it stands for (options, recordings and deadlines included)."""

from __future__ import annotations

import json

import pytest

from gymgate.errors import UsageError
from gymgate.harness.run_options import RunOptions
from gymgate.refs.source import KIND_GIT, KIND_PIN, GymSource
from gymgate.remote.unit_spec import LoadUnitSpec, RefusedUnit, UnitSpec, read_spec, source_pack
from gymgate.remote.units import Unit, command, payloads


def test_a_units_name_is_readable_and_a_second_attempt_is_another_name():
    unit = Unit("0.7.0", {"expected": []})
    assert unit.name == "unit-0.7.0-a1" and unit.again().name == "unit-0.7.0-a2"
    assert Unit("../Gym checkout", {}).name == "unit-.._Gym_checkout-a1"
    assert command("/s/spec.json", "/s/run") == ["unit", "/s/spec.json", "--run-dir", "/s/run"]


def test_a_unit_travels_as_json_and_comes_back_the_same():
    unit = Unit("0.7.0", {"expected": ["mcqa:accepted"], "options": {"attempts": 2}}, 2)
    assert Unit.from_json(json.loads(json.dumps(unit.to_json()))) == unit


def test_run_options_reach_the_node_whole_but_where_runs_go_and_the_cluster_stay_here(tmp_path):
    opts = RunOptions(
        envs=["mcqa"],
        runs_dir=tmp_path,
        attempts=3,
        deadlines={"mcqa:accepted": 12.5},
        plan=({"id": "mcqa:accepted", "env": "mcqa"},),
        wide=True,
        ray_address="127.0.0.2:6379",
        ray_python="/usr/bin/python3",
    )
    sent = json.loads(json.dumps(opts.to_json()))
    assert "runs_dir" not in sent and "ray_address" not in sent and "ray_python" not in sent
    back = RunOptions.from_json(sent, runs_dir=tmp_path / "node")
    assert back.runs_dir == tmp_path / "node" and back.ray_address == ""
    assert back == RunOptions(**{**vars(opts), "runs_dir": tmp_path / "node", "ray_address": "", "ray_python": ""})


def _source(kind: str = KIND_PIN, digest: str = "a" * 64) -> GymSource:
    return GymSource("0.7.0", kind, "0.7.0", ">=3.13.14", digest, "https://index")


def test_a_pin_goes_by_its_name_and_a_tree_as_a_pack_the_node_resolves_to_the_same_digest(tmp_path):
    from gymgate.refs import resolve_ref
    from gymgate.remote.node import SOURCES, materialise
    from tests.helpers import write_tree

    assert source_pack(_source()) is None
    tree = resolve_ref(str(write_tree(tmp_path / "gym", "0.7.0")))
    digest, blob = source_pack(tree)
    where = materialise(blob, digest, tmp_path / "node-cache", SOURCES)
    spec = UnitSpec(tree.to_json(), [], {}, "r1", payload=digest, source_path=str(where))
    assert spec.resolved().digest == tree.digest and spec.resolved().name == tree.name
    (where / "extra.py").write_text("changed on the node\n")
    with pytest.raises(RefusedUnit, match="resolves here to"):
        spec.resolved()
    commit = GymSource("git-abc", KIND_GIT, "0.7.0", ">=3.12", "c" * 40, "repo", tmp_path, "c" * 40, {"subject": "s"})
    back = UnitSpec(commit.to_json(), [], {}, "r1", payload="p", source_path=str(where)).resolved()
    assert back.path == where and back.commit == commit.commit and back.extra == commit.extra
    with pytest.raises(RefusedUnit, match="was to come as a pack"):
        UnitSpec(commit.to_json(), [], {}, "r1", payload="p").resolved()


class _Env:
    def __init__(self, project, version):
        self.project, self.interpreter = project, type("I", (), {"version": version})()


def test_a_node_refuses_a_lock_or_an_interpreter_other_than_the_callers(tmp_path):
    import hashlib

    (tmp_path / "uv.lock").write_text("lock\n")
    lock = hashlib.sha256(b"lock\n").hexdigest()
    spec = UnitSpec(_source().to_json(), [], {}, "r1", lock_sha256=lock, python="3.13.15")
    spec.admit(_Env(tmp_path, "3.13.15"))
    with pytest.raises(RefusedUnit, match="Python 3.13.14 .* expects 3.13.15"):
        spec.admit(_Env(tmp_path, "3.13.14"))
    (tmp_path / "uv.lock").write_text("another lock\n")
    with pytest.raises(RefusedUnit, match="the lock of 0.7.0"):
        spec.admit(_Env(tmp_path, "3.13.15"))
    UnitSpec(_source().to_json(), [], {}, "r1").admit(_Env(tmp_path, "3.12.0"))  # nothing expected: admitted


def test_a_unit_spec_is_read_back_whole_and_a_damaged_one_is_a_usage_error(tmp_path):
    spec = UnitSpec(_source().to_json(), ["mcqa:accepted"], {"attempts": 2}, "r1", True, "b" * 64, "3.13.15")
    (tmp_path / "spec.json").write_text(json.dumps(spec.to_json()))
    assert read_spec(tmp_path / "spec.json") == spec
    (tmp_path / "bad.json").write_text('{"source": {}}')
    with pytest.raises(UsageError, match="not a unit spec"):
        read_spec(tmp_path / "bad.json")
    # A load unit: both sides' runs, each read back as a run's spec, and the packs it needs are both sides'.
    tree = UnitSpec(_source().to_json(), [], {}, "r2", payload="d" * 64)
    load = LoadUnitSpec({"baseline": spec.to_json(), "candidate": tree.to_json()}, ["mcqa"], {"attempts": 1})
    (tmp_path / "load.json").write_text(json.dumps(load.to_json()))
    assert read_spec(tmp_path / "load.json") == load
    assert load.side("candidate") == tree
    assert payloads(load.to_json()) == [tree.to_json()]
    assert payloads(tree.to_json()) == [tree.to_json()] and payloads(spec.to_json()) == []
