"""The Gym mutation suite, defects that break a path: each mutant in mutants.toml without a group goes through
`gymgate accept --baseline 0.4.0` (tests/integration/mutation.py). The baseline's run is made once and reused by
every mutant of this file (its inputs do not change); two runs of the pin agree exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gymgate.runfolder import RunFolder
from tests.integration.mutation import SUITE, group, judge, run_dirs


@pytest.mark.parametrize("name", group(""))
def test_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)


def test_two_runs_of_the_same_ref_agree_exactly(runs, tmp_path):
    """No false alarms: a fresh run of the baseline pin, compared with the stored one (the mutants' baseline, or a
    first run made here), changes nothing. (With every recording replayed: test_replay_mutants.py, each mutant's untouched environment.)"""
    command = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", "0.4.0", "--no-baseline", "-n", "1"]
    command += SUITE["args"]  # as the mutants' runs: the hand-written paths (test_replay_mutants.py: with replays)
    for env in SUITE["envs"]:
        command += ["--env", env]

    expected = sorted(f"{env}:{mode}" for env in SUITE["envs"] for mode in ("accepted", "rejected"))

    def pin_runs() -> list[Path]:
        """Runs of the pin over the suite's environments (mutants with other environments have their own)."""
        found = [d for d in run_dirs(runs) if d.parent == runs]
        return sorted(
            d
            for d in found
            if RunFolder(d).source()["name"] == "0.4.0" and sorted(RunFolder(d).mark().expected) == expected
        )

    while len(pin_runs()) < 2:  # --no-cache: a fresh run even though a clean one with the same inputs is stored
        done = subprocess.run(
            [*command, "--runs-dir", str(runs), "--no-cache"], capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, done.stdout + done.stderr
    stored, fresh = pin_runs()[-2:]
    # Without --no-cache the same command is served from the cache: it names the stored run, and runs nothing.
    done = subprocess.run([*command, "--runs-dir", str(runs)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cached: {fresh} (none of its inputs changed" in done.stderr  # progress
    assert len(pin_runs()) == 2
    out = tmp_path / "report"
    out.mkdir()
    compare = [sys.executable, "-m", "gymgate", "compare", str(stored), str(fresh), "--out", str(out)]
    done = subprocess.run(compare, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    assert {p["category"] for p in results["paths"]} == {"same-pass"}
    assert [p["path"] for p in results["paths"] if p["changed"]] == []
    assert results["verdict"] == "no regression (4 paths pass on both)"
