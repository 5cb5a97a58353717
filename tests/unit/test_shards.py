"""Shards (shards/): which environments shard K of N runs, and merging shard runs into one run that compares,
reports and is served from the cache like the unsharded run — refusing anything that is not one whole split."""

from __future__ import annotations

import json
import re

import pytest

from gymgate.cli import main
from gymgate.compare.reuse import find_cached, inputs_digest
from gymgate.compare.runs import compare_runs
from gymgate.errors import UsageError
from gymgate.runfolder import RunFolder
from gymgate.shards.merge import gather
from gymgate.shards.split import Shard, split
from tests.helpers import record, stored_run

COSTS = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 10.0}
SHARED = {"0.3.0": "s" * 64, "0.4.0": "t" * 64}


def test_the_split_balances_measured_cost_and_is_the_same_everywhere():
    groups = split(["d", "c", "b", "a"], 2, COSTS)
    assert groups == [["a", "d"], ["b", "c"]]  # 110 s each; by name it would be [a, b] and [c, d]
    assert split(["a", "b", "c", "d"], 2, COSTS) == groups  # the order given does not matter
    assert sorted(sum(split(list(COSTS), 3, COSTS), [])) == sorted(COSTS)  # every environment exactly once
    assert split(["x", "y", "a"], 2, {"a": 100.0}) == [["a", "y"], ["x"]]  # unmeasured: the median of the known


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="K/N"):
        Shard.parse(text)


def _paths(*envs):
    return [f"{e}:{m}" for e in envs for m in ("accepted", "rejected")]


def _shard(root, name, pin, envs, shard, outcomes=None, **mark):
    outcomes = outcomes or {}
    records = [record(p, outcomes.get(p, "PASS")) for p in _paths(*envs)]
    mark = {"shard": shard, "shared_inputs": SHARED[pin], "expected": _paths(*envs), "pytest_exit": 0, **mark}
    return stored_run(root, name, pin, records, **mark)


def _bump(tmp_path):
    """A baseline and a candidate, each in two shards; the candidate's shard 2 regressed b:accepted and reran it."""
    runs = tmp_path / "runs"
    base = [_shard(runs, "base-1", "0.3.0", ["a"], "1/2"), _shard(runs, "base-2", "0.3.0", ["b"], "2/2")]
    cand = [
        _shard(runs, "cand-1", "0.4.0", ["a"], "1/2"),
        _shard(runs, "cand-2", "0.4.0", ["b"], "2/2", {"b:accepted": "FAIL"}, pytest_exit=1),
    ]
    shard2 = RunFolder(cand[1])
    shard2.write_reruns_manifest({"baseline_run": "base-2", "attempts": 1, "paths": ["b:accepted"], "done": 2})
    for role, outcome, pin in (("candidate", "FAIL", "0.4.0"), ("baseline", "PASS", "0.3.0")):
        attempt = shard2.attempt(role, 2).root
        stored_run(attempt.parent, attempt.name, pin, [record("b:accepted", outcome)], expected=["b:accepted"])
    return runs, base, cand


def _unsharded(tmp_path):
    """The same bump run whole."""
    root = tmp_path / "whole"
    base = stored_run(root, "base", "0.3.0", [record(p, "PASS") for p in _paths("a", "b")], expected=_paths("a", "b"))
    cand_records = [record(p, "FAIL" if p == "b:accepted" else "PASS") for p in _paths("a", "b")]
    cand = stored_run(root, "cand", "0.4.0", cand_records, expected=_paths("a", "b"))
    run = RunFolder(cand)
    run.write_reruns_manifest({"baseline_run": "base", "attempts": 1, "paths": ["b:accepted"], "done": 2})
    for role, outcome, pin in (("candidate", "FAIL", "0.4.0"), ("baseline", "PASS", "0.3.0")):
        attempt = run.attempt(role, 2).root
        stored_run(attempt.parent, attempt.name, pin, [record("b:accepted", outcome)], expected=["b:accepted"])
    return base, cand


def _normalized(comparison):
    return (
        comparison.exit_code,
        comparison.verdict,
        [(p.path, p.category, p.attempts, p.causes) for p in comparison.paths],
    )


def test_merged_shards_compare_like_the_unsharded_bump(tmp_path, capsys):
    runs, base, cand = _bump(tmp_path)
    out = tmp_path / "merged"
    # Given in any order: grouped by ref, the baseline found from what the candidate's shards were compared to.
    code = main(["merge", str(cand[1]), str(base[0]), str(cand[0]), str(base[1]), "--runs-dir", str(out), "--json"])
    merged = {RunFolder(p).source()["name"]: p for p in out.iterdir()}
    whole = compare_runs(*_unsharded(tmp_path))
    got = compare_runs(merged["0.3.0"], merged["0.4.0"])
    assert _normalized(got) == _normalized(whole)
    assert code == whole.exit_code == 1
    assert got.paths[2].attempts == {"baseline": ["PASS", "PASS"], "candidate": ["FAIL", "FAIL"]}  # reruns kept
    results = json.loads((merged["0.4.0"] / "results.json").read_text())
    assert {p["path"]: p["category"] for p in results["paths"]}["b:accepted"] == "regressed"
    mark = RunFolder(merged["0.4.0"]).mark()
    assert (mark.expected, mark.shard, mark.merged_from) == (_paths("a", "b"), "", ["cand-1", "cand-2"])
    assert mark.inputs == inputs_digest(SHARED["0.4.0"], _paths("a", "b"))  # the unsharded run's cache key
    capsys.readouterr()


def test_a_clean_merged_run_is_served_from_the_cache_like_the_whole_run(tmp_path, capsys):
    runs, base, _ = _bump(tmp_path)
    out = tmp_path / "merged"
    assert main(["merge", *map(str, base), "--runs-dir", str(out)]) == 0
    (merged,) = out.iterdir()
    found = find_cached(out, inputs_digest(SHARED["0.3.0"], list(reversed(_paths("a", "b")))))
    assert found is not None and found.root == merged
    capsys.readouterr()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("missing", "shard(s) 2/2 missing"),
        ("twice", "shard 1/2 of 0.4.0 is given 2 times"),
        ("other split", "split it differently"),
        ("other inputs", "different inputs"),
        ("overlap", "overlap: a:accepted"),
        ("unfinished", "did not finish"),
        ("not a shard", "is not a shard run"),
    ],
)
def test_anything_but_one_whole_split_is_refused_before_anything_is_written(tmp_path, change, why, capsys):
    runs = tmp_path / "runs"
    one = _shard(runs, "one", "0.4.0", ["a"], "1/2")
    two = {
        "missing": None,
        "twice": lambda: _shard(runs, "again", "0.4.0", ["b"], "1/2"),
        "other split": lambda: _shard(runs, "two", "0.4.0", ["b"], "2/3"),
        "other inputs": lambda: _shard(runs, "two", "0.4.0", ["b"], "2/2", shared_inputs="u" * 64),
        "overlap": lambda: _shard(runs, "two", "0.4.0", ["a"], "2/2"),
        "unfinished": lambda: _shard(runs, "two", "0.4.0", ["b"], "2/2", complete=False, incomplete="interrupted"),
        "not a shard": lambda: _shard(runs, "two", "0.4.0", ["b"], ""),
    }[change]
    given = [one] + ([two()] if two else [])
    with pytest.raises(UsageError, match=re.escape(why)):
        gather(given)
    out = tmp_path / "out"
    assert main(["merge", *map(str, given), "--runs-dir", str(out)]) == 2
    assert not out.exists()  # nothing written
    assert why.split(":")[0] in capsys.readouterr().err


def test_two_refs_neither_compared_to_the_other_are_refused(tmp_path, capsys):
    from gymgate.shards.merge import baseline_of

    runs, base, cand = _bump(tmp_path)
    found = baseline_of(gather([*cand, *base]))  # cand-2's reruns name base-2: the baseline is known
    assert [s.ref for s in found] == ["0.3.0", "0.4.0"]
    RunFolder(cand[1]).write_reruns_manifest({"baseline_run": "", "attempts": 1, "paths": [], "done": 1})
    with pytest.raises(UsageError, match="cannot tell which"):
        baseline_of(gather([*base, *cand]))  # without any such link there is no telling
    assert main(["merge", *map(str, base), *map(str, cand), "--runs-dir", str(tmp_path / "out")]) == 2
    assert "cannot tell which" in capsys.readouterr().err
