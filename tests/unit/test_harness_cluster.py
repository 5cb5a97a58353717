"""A command's runs sent to a cluster (gymgate/harness/cluster.py) against a stand-in dispatch that writes what a
node would: a unit's own finished run is judged as a local run is; a unit that was refused, lost twice or sent a
run that is not its own is never a verdict (its run is marked incomplete with the reason: exit 2); a ref no node
can resolve by name is refused before anything is sent."""

from __future__ import annotations

import pytest

from gymgate.errors import UsageError
from gymgate.harness import cluster
from gymgate.harness.run import RefRun, RunOptions
from gymgate.refs.source import KIND_PIN, KIND_TREE, GymSource
from gymgate.remote import dispatch
from gymgate.remote.caller import Outcome
from gymgate.runfolder import RunFolder, RunMark
from tests.helpers import record

PATHS = ["mcqa:accepted", "mcqa:rejected"]


def _source(name: str = "0.7.0", kind: str = KIND_PIN) -> GymSource:
    return GymSource(name, kind, "0.7.0", ">=3.13.14", "d" * 64, "index")


def _send(monkeypatch, tmp_path, node, sources=("0.7.0",)):
    """Run `sources` through the cluster seam; `node(unit, folder)` writes the unit's run and says how it ended."""
    sent = []

    def dispatched(address, ray_python, units, into):
        sent.extend(units)
        found = [node(unit, into[unit.label]) for unit in units]
        outcomes = {unit.name: state for unit, (state, _, _) in zip(units, found, strict=True)}
        codes = {unit.name: code for unit, (_, code, _) in zip(units, found, strict=True)}
        reasons = {unit.name: why for unit, (_, _, why) in zip(units, found, strict=True) if why}
        return Outcome(outcomes, reasons, {}, codes, 0)

    monkeypatch.setattr(cluster, "run_dispatch", dispatched)
    monkeypatch.setattr(cluster, "expectation", lambda call: (None, None))  # nothing of this machine's env
    opts = RunOptions(runs_dir=tmp_path, ray_address="127.0.0.2:6379", ray_python="python")
    calls = [RefRun(_source(name), PATHS, opts, reuse=True) for name in sources]
    return cluster.run_remote(calls), sent


def _finished(unit, folder, run_id=None, outcome="PASS"):
    run = RunFolder(folder)
    for path in PATHS:
        run.write_record(record(path, outcome))
    mark = RunMark(expected=PATHS, complete=True, run_id=run_id or unit.spec["run_id"], pytest_exit=0)
    run.write_mark(mark)


def test_a_units_own_finished_run_is_judged_as_a_local_run_is(monkeypatch, tmp_path):
    results, sent = _send(
        monkeypatch,
        tmp_path,
        lambda unit, folder: (_finished(unit, folder), (dispatch.DONE, 0, ""))[1],
        ("0.4.0", "0.7.0"),
    )
    assert [r.code for r in results] == [0, 0] and [u.label for u in sent] == ["0.4.0", "0.7.0"]  # one dispatch
    assert sent[0].spec["expected"] == PATHS and sent[0].spec["options"]["attempts"] == 2
    assert "ray_address" not in sent[0].spec["options"]


def test_a_failing_run_on_a_node_is_a_failing_run_here(monkeypatch, tmp_path):
    node = lambda unit, folder: (_finished(unit, folder, outcome="FAIL"), (dispatch.DONE, 1, ""))[1]  # noqa: E731
    (result,), _ = _send(monkeypatch, tmp_path, node)
    assert result.code == 1


@pytest.mark.parametrize(
    "node, why",
    [
        (lambda unit, folder: (dispatch.DONE, 2, "refused: the lock of 0.7.0 here is sha256:abc"), "refused: the lock"),
        (
            lambda unit, folder: (_finished(unit, folder), (dispatch.UNJUDGED, None, "lost twice: ActorDiedError"))[1],
            "unjudged: lost twice",
        ),
        (
            lambda unit, folder: (_finished(unit, folder, run_id="another"), (dispatch.DONE, 0, ""))[1],
            "not '",
        ),
        (lambda unit, folder: (dispatch.STOPPED, None, ""), "stopped"),
    ],
    ids=["refused", "lost-twice", "another-run", "stopped"],
)
def test_a_unit_that_did_not_make_its_own_run_is_never_a_verdict(monkeypatch, tmp_path, node, why):
    (result,), _ = _send(monkeypatch, tmp_path, node)
    assert result.code == 2
    mark = RunFolder(result.dir).mark()
    assert mark is not None and not mark.complete and why in mark.incomplete


def test_a_ref_no_node_can_resolve_by_name_is_refused_before_anything_is_sent(monkeypatch, tmp_path):
    monkeypatch.setattr(cluster, "run_dispatch", lambda *a, **k: pytest.fail("sent"))
    opts = RunOptions(runs_dir=tmp_path, ray_address="auto")
    with pytest.raises(UsageError, match="takes pins and package-index versions"):
        cluster.run_remote([RefRun(_source("tree-0.7.0", KIND_TREE), PATHS, opts)])
    assert list(tmp_path.iterdir()) == []
