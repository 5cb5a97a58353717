"""A ref run as two shards on real Gyms and merged gives the same records and the same comparison as the ref run
whole, and the merged run is served from the cache for the whole run's inputs (issue 13). Two environments of the
0.4.0 pin keep it short: one per shard."""

from __future__ import annotations

import json
import subprocess
import sys

from gymgate.compare.observation import flatten, rules
from gymgate.compare.runs import compare_runs
from gymgate.runfolder import RunFolder

ENVS = ("--env", "mcqa", "--env", "equivalence_llm_judge")
VOLATILE = ("timings", "metrics")  # wall-clock figures; everything else of a record must be identical


def _gymgate(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gymgate", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def _new_run(runs, before: set) -> RunFolder:
    (made,) = set(runs.iterdir()) - before
    return RunFolder(made)


def _records(run: RunFolder) -> dict:
    """Each record without wall-clock figures, its observation with the values every run changes (ids, timestamps:
    compare/nondeterministic.toml) masked."""
    found = {}
    for path, made in run.records().items():
        found[path] = []
        for attempt in made.attempt_records():  # every attempt in the same Gym, each alike
            data = {k: v for k, v in attempt.to_json().items() if k not in VOLATILE}
            data["observed"] = flatten(attempt.observed, rules())[0]
            found[path].append(data)
    return found


def _normalized(comparison) -> tuple:
    return comparison.exit_code, comparison.verdict, [(p.path, p.category, p.changes) for p in comparison.paths]


def test_two_shards_merged_are_the_whole_run(tmp_path):
    runs, merged_dir = tmp_path / "runs", tmp_path / "merged"
    runs.mkdir()
    common = ("accept", "--gym-ref", "0.4.0", "--no-baseline", "--no-cache", "--runs-dir", str(runs), *ENVS)
    before = set(runs.iterdir())
    done = _gymgate(*common, "-n", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    whole = _new_run(runs, before)
    shards = []
    for shard in ("1/2", "2/2"):
        before = set(runs.iterdir())
        done = _gymgate(*common, "-n", "1", "--shard", shard)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"shard {shard}: " in done.stderr  # progress
        shards.append(_new_run(runs, before))
    assert sorted(p for s in shards for p in s.mark().expected) == sorted(whole.mark().expected)
    assert all(len(s.mark().expected) == 7 for s in shards)  # one environment each: two cases, five recordings
    assert all(len(s.plan()) == 7 for s in shards)  # each shard was handed its environment's paths, no more

    done = _gymgate("merge", *(str(s.root) for s in shards), "--runs-dir", str(merged_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    (merged,) = (RunFolder(p) for p in merged_dir.iterdir())
    assert _records(merged) == _records(whole)
    assert merged.mark().inputs == whole.mark().inputs  # the same cache key as the whole run
    assert _normalized(compare_runs(whole.root, merged.root)) == _normalized(compare_runs(whole.root, whole.root))

    # The merged run is served for the whole run's inputs (the newest clean run with them).
    done = _gymgate("accept", "--gym-ref", "0.4.0", "--no-baseline", "--runs-dir", str(merged_dir), *ENVS, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cached: {merged.root}" in done.stderr  # with --json, everything but the verdict goes to stderr
    verdict = json.loads(done.stdout)
    assert (verdict["kind"], verdict["verdict"], verdict["cached"]) == ("run", "clean", True)
    assert verdict["run_dir"] == str(merged.root) and verdict["outcomes"]["PASS"] == 14
