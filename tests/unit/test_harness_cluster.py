"""A command's runs sent to a cluster (gymgate/harness/cluster.py) against a stand-in dispatch that writes what a
node would: a unit's own finished run is judged as a local run is; a unit that was refused, lost twice or sent a
run that is not its own is never a verdict (its run is marked incomplete with the reason: exit 2); a local tree
travels as a pack named by its digest, a pin by its name."""

from __future__ import annotations

import pytest

from gymgate.errors import EXIT_UNJUDGED
from gymgate.harness import cluster
from gymgate.harness.run_options import RefRun, RunOptions
from gymgate.refs.source import KIND_PIN, GymSource
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

    def dispatched(address, ray_python, units, into, sources):
        sent.extend(units)
        assert set(sources) == {u.spec["payload"] for u in units if u.spec["payload"]}
        found = [node(unit, into[unit.label]) for unit in units]
        outcomes = {unit.name: state for unit, (state, _, _) in zip(units, found, strict=True)}
        codes = {unit.name: code for unit, (_, code, _) in zip(units, found, strict=True)}
        reasons = {unit.name: why for unit, (_, _, why) in zip(units, found, strict=True) if why}
        return Outcome(outcomes, reasons, {}, codes, 0)

    monkeypatch.setattr(cluster, "run_dispatch", dispatched)
    monkeypatch.setattr(
        cluster, "expectation", lambda source, wide=False: (None, None)
    )  # nothing of this machine's env
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


def test_a_ref_its_node_could_not_build_is_broken_here_as_it_would_be_locally(monkeypatch, tmp_path):
    """A BROKEN run is a finding about the ref (exit 1), not an infrastructure error: bisect skips such commits."""
    from gymgate.harness.run import write_broken_run

    def node(unit, folder):
        write_broken_run(RunFolder(folder), _source(), PATHS, "build: no such dependency", unit.spec["run_id"])
        return dispatch.DONE, 1, ""

    (result,), _ = _send(monkeypatch, tmp_path, node)
    assert result.code == 1 and result.broken == "build: no such dependency"


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
    assert result.code == EXIT_UNJUDGED
    mark = RunFolder(result.dir).mark()
    assert mark is not None and not mark.complete and why in mark.incomplete


def test_a_local_tree_travels_as_a_pack_and_a_pin_by_its_name(monkeypatch, tmp_path):
    from gymgate.refs import resolve_ref
    from gymgate.remote.node import unpack
    from tests.helpers import write_tree

    tree = resolve_ref(str(write_tree(tmp_path / "gym", "0.7.0")))
    shipped = {}

    def dispatched(address, ray_python, units, into, sources):
        shipped.update(sources)
        for unit in units:
            _finished(unit, into[unit.label])
        return Outcome({u.name: dispatch.DONE for u in units}, {}, {}, {u.name: 0 for u in units}, 0)

    monkeypatch.setattr(cluster, "run_dispatch", dispatched)
    opts = RunOptions(runs_dir=tmp_path / "runs", ray_address="auto", ray_python="python")
    results = cluster.run_remote([RefRun(tree, PATHS, opts), RefRun(_source(), PATHS, opts)])
    assert [r.code for r in results] == [0, 0]
    ((digest, blob),) = shipped.items()
    unpacked = tmp_path / "unpacked"
    unpack(blob, unpacked)
    assert resolve_ref(str(unpacked)).digest == tree.digest  # the node finds the very tree the caller has


def test_only_a_pins_committed_lock_is_expected_of_a_node(tmp_path):
    """Every generated project (an index version, a tree, the wide project) is locked where it is built, its lock
    naming where gymgate and the source lie there: expecting the caller's would refuse every such unit."""
    from gymgate.refs import resolve_ref

    pin = resolve_ref("0.7.0")
    lock, _ = cluster.expectation(pin)
    assert lock is not None and lock.is_file() and lock.parent.name == "0.7.0"
    assert cluster.expectation(pin, wide=True)[0] is None
    index = GymSource("0.7.0", "index", "0.7.0", ">=3.13.14", "d" * 64, "index")
    assert cluster.expectation(index)[0] is None


def test_load_units_carry_both_refs_and_their_share_and_come_back_merged(monkeypatch, tmp_path):
    """`accept --load --ray-address` (harness/load_cluster.py): a unit per environment (sweep.toml `[cluster]`), each
    both refs' runs with only its share's plan; a local tree travels as a pack; what each node measured is merged and
    judged here, and an environment whose unit came back with nothing is unjudged (exit 2)."""
    import json  # noqa: PLC0415 - this test only

    from gymgate.harness import load_cluster  # noqa: PLC0415 - this test only
    from gymgate.load.measures import BASELINE, CANDIDATE  # noqa: PLC0415 - this test only
    from gymgate.remote.unit_spec import LoadUnitSpec  # noqa: PLC0415 - this test only
    from gymgate.remote.units import payloads  # noqa: PLC0415 - this test only
    from tests.unit.test_load import _unit_record, side  # noqa: PLC0415 - this test only

    tree = tmp_path / "gym"
    (tree / "nemo_gym").mkdir(parents=True)
    (tree / "nemo_gym" / "__init__.py").write_text("")
    candidate = GymSource("tree", "tree", "0.7.0", ">=3.13.14", "e" * 64, "local", path=tree)
    sent = []

    def dispatched(address, ray_python, units, into, sources):
        sent.extend(units)
        assert set(sources) == {run["payload"] for u in units for run in payloads(u.spec)}
        for unit in units[:1]:  # the first unit's node measured its share; the second brought nothing back
            folder = into[unit.label] / "load"
            folder.mkdir(parents=True)
            same = (side(cpu_ms=15), side(cpu_ms=15))
            (folder / "load.json").write_text(json.dumps(_unit_record({e: same for e in unit.spec["envs"]})))
        names = [u.name for u in units]
        return Outcome(
            dict.fromkeys(names, dispatch.DONE), {names[1]: "refused: no uv"}, {}, {names[0]: 0, names[1]: 2}, 0
        )

    monkeypatch.setattr(load_cluster, "run_dispatch", dispatched)
    monkeypatch.setattr(cluster, "expectation", lambda source, wide=False: (None, None))
    plan = tuple({"id": f"{env}:accepted"} for env in ("mcqa", "code_gen"))
    opts = RunOptions(runs_dir=tmp_path, ray_address="127.0.0.2:6379", ray_python="python", plan=plan)
    run = load_cluster.load_on_cluster(
        {BASELINE: _source(), CANDIDATE: candidate}, ["mcqa", "code_gen"], opts, tmp_path / "out", None
    )
    assert [u.label for u in sent] == ["load-1-mcqa", "load-2-code_gen"]
    first = LoadUnitSpec.from_json(sent[0].spec)
    assert first.envs == ["mcqa"] and [p["id"] for p in first.options["plan"]] == ["mcqa:accepted"]
    assert first.side(BASELINE).source["name"] == "0.7.0" and not first.side(BASELINE).payload
    assert first.side(CANDIDATE).payload  # the tree goes as a pack, named by its digest
    assert run.verdict.code == EXIT_UNJUDGED and run.record["units"]["load-2-code_gen"]["ended"].endswith(
        "refused: no uv"
    )
    assert [line.split(":")[0] for line in run.verdict.unjudged] == ["code_gen"]
    assert (tmp_path / "out" / "load" / "report.md").is_file()
