"""Parallel runs through the real CLI: results independent of the worker count, two runs of different
pins side by side without seeing each other, and a crashed worker contained to its own path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gymgate.compare.observation import diff
from gymgate.processes import marked_pids
from gymgate.runfolder import RunFolder

# Multi-turn tools (workplace), a judge (equivalence) and the self-test environment (mcqa).
ENVS = ["mcqa", "workplace_assistant", "equivalence_llm_judge"]
RUN_SPECIFIC = {"timings", "observed"}  # the observations are compared through the declared nondeterminism list


def accept(ref: str, runs: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    """One ref run alone (no baseline: these tests judge runs, not bumps)."""
    args = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", ref, "--runs-dir", str(runs), "--no-baseline"]
    args += [a for a in extra if a != "--no-baseline"]
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})}
    )


def finish(proc: subprocess.Popen, runs: Path) -> tuple[int, str, Path]:
    out, _ = proc.communicate(timeout=900)
    dirs = list(runs.iterdir()) if runs.exists() else []
    assert len(dirs) == 1, f"expected one run folder in {runs}:\n{out}"
    (run_dir,) = dirs
    run_id = re.search(r"^run (\w+):", out, re.M).group(1)
    assert marked_pids(run_id) == [], f"processes of run {run_id} outlived it"
    return proc.returncode, out, run_dir


def normalized(run_dir: Path) -> dict[str, dict]:
    def strip(record) -> dict:
        return {k: v for k, v in record.to_json().items() if k not in RUN_SPECIFIC | {"repeats"}}

    records = RunFolder(run_dir).records()
    # Each path's first attempt, with its later attempts in the same Gym normalized alike.
    return {name: {**strip(r), "repeats": [strip(a) for a in r.attempt_records()[1:]]} for name, r in records.items()}


def _env_args() -> list[str]:
    return [a for e in ENVS for a in ("--env", e)]


def test_results_do_not_depend_on_parallelism(tmp_path):
    serial = finish(accept("0.4.0", tmp_path / "serial", "-n", "1", *_env_args()), tmp_path / "serial")
    parallel = finish(accept("0.4.0", tmp_path / "parallel", "-n", "2", *_env_args()), tmp_path / "parallel")
    assert serial[0] == 0, serial[1]
    assert parallel[0] == 0, parallel[1]
    a, b = normalized(serial[2]), normalized(parallel[2])
    assert len(a) == 7 * len(ENVS)  # each environment's two hand-written paths and its five recordings
    assert a == b
    for name in a:
        if a[name]["outcome"] == "SKIP":
            continue  # a recording whose row Gym does not ship: nothing ran, nothing was observed (on both)
        observed = [RunFolder(run).records()[name].observed for run in (serial[2], parallel[2])]
        assert observed[0]["requests"] and diff(*observed) == [], name
    owners = {status.worker for status in RunFolder(parallel[2]).service_statuses().values()}
    assert owners == {"gw0", "gw1"}  # the environments really were spread over two workers


def test_two_pins_side_by_side_are_isolated(tmp_path):
    runs = {ref: accept(ref, tmp_path / ref, "-n", "1", "--env", "mcqa", "--no-baseline") for ref in ("0.4.0", "0.3.0")}
    done = {ref: finish(proc, tmp_path / ref) for ref, proc in runs.items()}
    gcs = set()
    for ref, (code, out, run_dir) in done.items():
        assert code == 0, out
        run_id = re.search(r"^run (\w+):", out, re.M).group(1)
        records = normalized(run_dir)
        assert {r["gym"]["version"] for r in records.values()} == {ref}
        (worker,) = RunFolder(run_dir).workers().values()
        gcs.add(worker.gcs)
        assert worker.named_actors and all(a.startswith(f"gymgate-{run_id}-") for a in worker.named_actors)
    assert len(gcs) == 2  # two clusters, one per run


@pytest.mark.parametrize("workers", ["2"])
def test_a_crashed_worker_errors_only_its_path(tmp_path, workers):
    proc = accept(
        "0.4.0",
        tmp_path,
        "-n",
        workers,
        "--env",
        "mcqa",
        "--env",
        "equivalence_llm_judge",
        "--no-replays",  # a worker's crash, on the hand-written paths alone
        env={"GYMGATE_SELFTEST_CRASH_PATH": "mcqa:rejected"},
    )
    code, out, run_dir = finish(proc, tmp_path)
    assert code == 1, out
    outcomes = {k: v["outcome"] for k, v in normalized(run_dir).items()}
    assert outcomes == {
        "mcqa:accepted": "PASS",
        "mcqa:rejected": "ERROR",
        "equivalence_llm_judge:accepted": "PASS",
        "equivalence_llm_judge:rejected": "PASS",
    }, out + (run_dir / "pytest.log").read_text()[-4000:]
    assert re.search(r"mcqa:rejected\s+ERROR\s+harness\s+infrastructure: worker 'gw\d' crashed", out), out
