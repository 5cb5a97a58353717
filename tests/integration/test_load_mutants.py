"""Gym under RL's load (issue 54): each mutant of tests/integration/load_mutants.toml the suite runs (`ci`; every one
runs in `nox -s bench -- load-mutants`) is a defect no rollout run alone shows, and goes through `gymgate accept
--gym-ref <mutant> --baseline 0.7.0 --load` as a user would run it. Its acceptance paths stay clean; its load verdict
names exactly its findings (environment, metrics or correctness) with the figure, and nothing else (a defect's
consequences are named with it: CPU on the event loop queues rollouts, so latency and throughput regress with the
CPU); the unchanged sdist has no finding; the load workers leave nothing running."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.integration.mutation import build_mutant

SUITE = tomllib.loads((Path(__file__).parent / "load_mutants.toml").read_text())
MUTANTS = {m["name"]: {**m, "version": SUITE["version"]} for m in SUITE["mutant"]}


def build(mutant: dict, root: Path) -> Path:
    """The mutant's checkout: its one change (tests/integration/mutation.py), then each of its further `edits`."""
    gym = build_mutant(mutant, root)
    for edit in mutant.get("edits", []):
        target = gym / edit.get("file", mutant["file"])
        lines = target.read_text().split("\n")
        hits = [i for i, line in enumerate(lines) if line == edit["line"]]
        assert len(hits) == 1, f"{mutant['name']}: {mutant['file']} changed upstream; update it"
        lines[hits[0]] = edit["new"]
        target.write_text("\n".join(lines))
    return gym


def accept_under_load(gym: Path, mutant: dict, runs: Path, *extra: str) -> subprocess.CompletedProcess:
    """`extra`: more options (a cluster to run on)."""
    command = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", str(gym), "--baseline", mutant["version"]]
    command += ["--load", "--runs-dir", str(runs), "-n", "1", "--reruns", "0", "--json"]
    command += mutant.get("args", SUITE["args"])
    for env in mutant["envs"]:
        command += ["--env", env]
    return subprocess.run([*command, *extra], capture_output=True, text=True, timeout=1500)


@pytest.mark.parametrize("name", [n for n, m in MUTANTS.items() if m.get("ci")])
def test_load_mutant(name, runs, tmp_path):
    mutant = MUTANTS[name]
    gym = build(mutant, tmp_path / "gym")
    judged(mutant, accept_under_load(gym, mutant, runs))


def judged(mutant: dict, done: subprocess.CompletedProcess) -> dict:
    """The mutant's bump judged exactly as the suite expects; its load record."""
    out = done.stdout + done.stderr
    assert done.returncode == mutant["exit"], out
    document = json.loads(done.stdout[done.stdout.index("{") :])
    load = document["load"]
    assert load["code"] == mutant["exit"], out
    # The acceptance comparison saw nothing but the paths the mutant names (`paths`) among those that ran: one rollout
    # at a time, these defects pass, but a client retrying without end meets the fault paths' bound on attempts when
    # fault paths run (the suite runs without them: tests/integration/conftest.py; the bench with them).
    ran = {p["path"] for p in document["paths"]}
    regressed_paths = {p["path"] for p in document["paths"] if p["category"] != "same-pass"}
    assert regressed_paths == set(mutant.get("paths", [])) & ran, out
    record = json.loads((Path(load["folder"]) / "load.json").read_text())
    for side in ("baseline", "candidate"):  # the load workers stopped everything they started
        assert record["refs"][side]["left_running"] == [], record["refs"][side]
    regressions = [m for m in load["metrics"] if m["category"] in ("regression", "insufficient data")]
    regressed = [c for c in load["correctness"] if c["category"] == "regressed under load"]
    saturated = [(s["env"], s["saturation"]) for s in load["saturation"] if s["category"] == "regressed under load"]
    assert load["unjudged"] == [], load["unjudged"]
    findings = mutant.get("findings", [])
    found = {(m["env"], m["metric"]) for m in regressions}
    assert {m["category"] for m in regressions} <= {"regression"}, out  # never insufficient data
    required = {(f["env"], m) for f in findings for m in f.get("metrics", [])}
    allowed = required | {(f["env"], m) for f in findings for m in f.get("also", [])}
    assert required <= found <= allowed, out
    correct = {(f["env"], f["correctness"]) for f in findings if "correctness" in f}
    maybe = correct | {(f["env"], c) for f in findings for c in f.get("also", []) if c == "regressed under load"}
    assert correct <= {(c["env"], c["category"]) for c in regressed} <= maybe, out
    assert all(c["detail"] for c in regressed), regressed  # what differed, and where
    for f in findings:  # the named way of saturating regresses (a storm, or a collision, meets the others too)
        if "saturation" in f:
            assert (f["env"], f["saturation"]) in saturated, out
    colliding = {f["env"] for f in findings if "saturation" in f or "correctness" in f}
    assert {e for e, _ in saturated} <= colliding, out
    if findings:
        assert "REGRESSED under load" in out and all(f"{f['env']}: " in out for f in findings)  # the figures
    return record
