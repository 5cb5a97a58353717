"""The typed records of a session's live state (runfolder/status.py) and the one balancer (gymgate.balance) that deals
environments to xdist workers (session/owners.py) and to shards (shards/split.py) by their measured cost."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gymgate.balance import longest_first
from gymgate.errors import UsageError
from gymgate.outcomes import EnvState
from gymgate.pathid import PathId
from gymgate.runfolder import EnvStatus, RunFolder, WorkerRecord
from gymgate.session.owners import live_share, plan, run_costs
from gymgate.shards.split import split

# As a session wrote them before the records were typed (the shape of runs/*/services/*.json, workers/*.json).
STORED_STATUS = {
    "at": 1796119714.497568,
    "blame": "gym",
    "env": "mcqa",
    "log": "/runs/r/logs/mcqa.log",
    "reason": "RuntimeError: Process `mcqa_environment_server` finished unexpectedly!",
    "seconds": 12.25995900099997,
    "servers": [],
    "status": "failed",
    "worker": "gw0",
}
STORED_READY = {
    **STORED_STATUS,
    "blame": "",
    "reason": "",
    "status": "ready",
    "servers": [{"name": "mcqa_simple_agent", "host": "127.0.0.1", "port": 20001}],
}
STORED_WORKER = {
    "endpoint_requests": 0,
    "gcs": "127.0.0.1:34861",
    "launched_after_s": 1.088,
    "named_actors": [],
    "namespace": "gymgate-a14e1594-gw0",
    "planned": ["mcqa"],
    "ready_seconds": 13.35,
    "stop_errors": {},
    "stop_seconds": 0.0,
    "worker": "gw0",
}


def _stored(path, data) -> str:
    """A file written as the session writes them (atomic.write_json_atomic's format)."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def test_stored_statuses_and_worker_records_read_typed_and_write_back_byte_identical(tmp_path):
    old, new = RunFolder(tmp_path / "old"), RunFolder(tmp_path / "new")
    texts = {
        "services/mcqa.json": _stored(old.root / "services" / "mcqa.json", STORED_STATUS),
        "services/code_gen.json": _stored(old.root / "services" / "code_gen.json", {**STORED_READY, "env": "code_gen"}),
        "workers/gw0.json": _stored(old.root / "workers" / "gw0.json", STORED_WORKER),
    }
    statuses = old.service_statuses()
    assert set(statuses) == {"mcqa", "code_gen"}
    failed = statuses["mcqa"]
    assert isinstance(failed, EnvStatus) and failed.status is EnvState.FAILED
    assert (failed.worker, failed.at, failed.blame, failed.seconds) == (
        "gw0",
        1796119714.497568,
        "gym",
        12.25995900099997,
    )
    assert statuses["code_gen"].servers[0]["port"] == 20001
    (worker,) = old.workers().values()
    assert isinstance(worker, WorkerRecord)
    assert (worker.worker, worker.planned, worker.stop_errors, worker.named_actors) == ("gw0", ["mcqa"], {}, [])
    for status in statuses.values():
        new.write_service_status(status)
    new.write_worker("gw0", worker)
    for name, text in texts.items():
        assert (new.root / name).read_text() == text, name


def test_a_status_round_trips_and_its_state_is_an_env_state():
    status = EnvStatus("mcqa", "ready", "", 3.5, [{"name": "s", "host": "h", "port": 1}], "x.log", "", "gw1", 7.0)
    assert status.status is EnvState.READY  # the string a file holds becomes the enum
    assert EnvStatus.from_json(status.to_json()) == status
    assert EnvStatus.from_json(json.loads(json.dumps(status.to_json()))) == status
    assert json.loads(json.dumps(status.to_json()))["status"] == "ready"
    with pytest.raises(ValueError):
        EnvStatus("mcqa", "warming up")


def test_a_status_without_worker_and_time_leaves_them_out():
    """The Fleet's own statuses (and each entry of `gymgate up`'s services.json) carry the seven keys they always
    had; a session adds who wrote it and when (services/<env>.json)."""
    status = EnvStatus("mcqa", EnvState.FAILED, "\x1b[31mboom\x1b[0m", 1.0, blame="gym")
    assert status.to_json() == {
        "env": "mcqa",
        "status": "failed",
        "reason": "boom",  # ANSI colours stripped
        "seconds": 1.0,
        "servers": [],
        "log": "",
        "blame": "gym",
    }
    written = dataclasses.replace(status, worker="gw0", at=5.0).to_json()
    assert written == {**status.to_json(), "worker": "gw0", "at": 5.0}


def test_a_worker_record_holds_only_the_fields_set(tmp_path):
    launched = WorkerRecord("up", "127.0.0.1:1", planned=["mcqa"], launched_after_s=0.5)
    assert launched.to_json() == {"worker": "up", "gcs": "127.0.0.1:1", "planned": ["mcqa"], "launched_after_s": 0.5}
    stopped = dataclasses.replace(
        launched, ready_seconds=9.0, stop_errors={"mcqa": ["shutdown timed out"]}, stop_seconds=60.0
    )
    assert WorkerRecord.from_json(stopped.to_json()) == stopped
    assert WorkerRecord.from_json({**STORED_WORKER, "from_a_newer_gymgate": 1}).to_json() == STORED_WORKER
    run = RunFolder(tmp_path)
    run.write_worker("up", stopped)
    assert run.workers() == {"up": stopped}
    assert run.lifecycle_failures() == ["mcqa: shutdown timed out"]


def test_a_damaged_worker_record_is_damage_and_a_status_being_written_is_skipped(tmp_path):
    run = RunFolder(tmp_path)
    _stored(tmp_path / "services" / "mcqa.json", {**STORED_STATUS, "status": "warming up"})
    _stored(tmp_path / "services" / "code_gen.json", {**STORED_READY, "env": "code_gen"})
    assert list(run.service_statuses()) == ["code_gen"]
    _stored(tmp_path / "workers" / "gw0.json", {"gcs": "no worker named"})
    with pytest.raises(UsageError, match="gw0.json is damaged"):
        run.workers()


# -- the balancer ---------------------------------------------------------------------------------------------------
def test_the_worker_plan_follows_the_costs_it_is_given():
    """Measured costs decide, not fixed weights: here code_gen and workplace_assistant are the light ones and share
    a worker (fixed weights that made them the two heaviest would put them on different workers)."""
    envs = ["workplace_assistant", "mcqa", "code_gen"]
    costs = {"mcqa": 100.0, "code_gen": 50.0, "workplace_assistant": 50.0}
    assert plan(envs, 2, costs) == {"mcqa": "gw0", "code_gen": "gw1", "workplace_assistant": "gw1"}
    flipped = {"mcqa": 1.0, "code_gen": 50.0, "workplace_assistant": 60.0}
    assert plan(envs, 2, flipped) == {"workplace_assistant": "gw0", "code_gen": "gw1", "mcqa": "gw1"}


def test_the_worker_plan_reads_the_measured_costs_by_default(tmp_path, monkeypatch):
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "costs.toml").write_text('[seconds]\n"mcqa" = 10.0\n"code_gen" = 5.0\n"b" = 4.0\n')
    monkeypatch.setenv("GYMGATE_REPO_ROOT", str(tmp_path))
    assert plan(["b", "code_gen", "mcqa"], 2) == {"mcqa": "gw0", "code_gen": "gw1", "b": "gw1"}
    (tmp_path / "shards" / "costs.toml").unlink()  # nothing measured: every environment costs the same
    assert plan(["b", "code_gen", "mcqa"], 2) == {"b": "gw0", "code_gen": "gw1", "mcqa": "gw0"}


def test_a_runs_environments_cost_what_their_paths_in_it_were_measured_to_cost(tmp_path, monkeypatch):
    """The paths decide: one slow recording makes math_with_judge the heaviest in a run of the recordings, though
    without them it is light; a path never measured costs the median of the measured ones."""
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "costs.toml").write_text(
        '[seconds]\n"mcqa" = 50.0\n"math_with_judge" = 10.0\n\n[paths]\n"mcqa:accepted" = 1.0\n'
        '"mcqa:rejected" = 1.0\n"mcqa:rec.a" = 1.0\n"math_with_judge:accepted" = 0.5\n'
        '"math_with_judge:rec.slow" = 7.0\n'
    )
    monkeypatch.setenv("GYMGATE_REPO_ROOT", str(tmp_path))
    hand = [PathId(p) for p in ("mcqa:accepted", "mcqa:rejected", "math_with_judge:accepted")]
    assert run_costs(hand) == {"mcqa": 2.0, "math_with_judge": 0.5}
    replayed = [*hand, PathId("mcqa:rec.a"), PathId("math_with_judge:rec.slow"), PathId("mcqa:rec.new")]
    assert run_costs(replayed) == {"mcqa": 4.0, "math_with_judge": 7.5}  # rec.new: the median, 1.0
    (tmp_path / "shards" / "costs.toml").write_text('[seconds]\n"mcqa" = 50.0\n"math_with_judge" = 10.0\n')
    assert run_costs(replayed) == {"mcqa": 50.0, "math_with_judge": 10.0}  # no path measured: the environments'


def test_a_worker_owning_few_environments_leaves_its_share_of_the_live_bound_to_one_owning_many():
    one_and_six = {"math_with_judge": "gw0", **{e: "gw1" for e in "abcdef"}}
    assert [live_share(one_and_six, 10, w) for w in ("gw0", "gw1")] == [1, 6]  # all fit: no second wave
    assert [live_share(one_and_six, 4, w) for w in ("gw0", "gw1")] == [1, 3]  # the bound holds
    even = {**{f"a{i}": "gw0" for i in range(30)}, **{f"b{i}": "gw1" for i in range(31)}}
    assert [live_share(even, 10, w) for w in ("gw0", "gw1")] == [5, 5]
    assert live_share(one_and_six, 10, "gw2") == 1  # a replacement worker owns nothing in the plan


def test_one_balancer_for_workers_and_shards_deterministic_and_median_for_the_unmeasured():
    costs = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 10.0}
    names = ["d", "x", "c", "b", "a"]  # x is unmeasured: it costs the median of a..d, 55
    dealt = longest_first(names, 2, costs)
    assert dealt == [["a", "c"], ["b", "x", "d"]]  # 150 and 125; heaviest first, each to the lighter bin
    assert longest_first(reversed(names), 2, costs) == dealt  # the order given never matters
    assert longest_first(["b", "a", "b"], 3, {}) == [["a"], ["b"], []]  # each once; equal costs in name order
    owners = plan(names, 2, costs)
    assert [sorted(e for e in names if owners[e] == w) for w in ("gw0", "gw1")] == split(names, 2, costs)
