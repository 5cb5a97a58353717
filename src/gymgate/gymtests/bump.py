"""Gym's own tests across a bump: each release's tests over its own code (the control) and over the other release's
code, in that release's locked environment plus the test layer; the tests whose category rests on one run of each
side confirmed by running both sides again; then every test judged (gymtests.judge) and reviewed (gymtests.acks)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.atomic import write_json_atomic
from gymgate.cases.environments import Environment
from gymgate.compare.acks import Reviews
from gymgate.errors import EXIT_FAILED, EXIT_OK, EXIT_UNJUDGED
from gymgate.gymtests import acks as gym_acks
from gymgate.gymtests import cached, overlay
from gymgate.gymtests.evidence import evidence
from gymgate.gymtests.execute import RootRun, Suite, run_suite
from gymgate.gymtests.judge import Side, SideRuns, TestCategory, TestVerdict, judge_side, to_confirm
from gymgate.gymtests.layer import layer_for
from gymgate.gymtests.roots import Root, root_of, roots_for
from gymgate.gymtests.trees import NoTests, source_tree
from gymgate.runfolder.folder import GYM_TESTS_RESULTS

CONFIRMATIONS = 1  # further runs of each side for a test whose category rests on one run of each
RESULTS_FILE = GYM_TESTS_RESULTS
SCHEMA = 1


@dataclass
class GymTestsRun:
    """A bump's judged tests, where they were run, and the exit code they give the gate."""

    folder: Path
    baseline: dict  # each ref's source (name, digest, …): what the ack files name
    candidate: dict
    scope: str
    verdicts: list[TestVerdict] = field(default_factory=list)
    roots: dict[str, dict] = field(default_factory=dict)  # per suite ("0.6.0 on 0.7.0"), each root's status
    seconds: float = 0.0
    why_not: str = ""  # set when the tests could not run at all
    stale_acks: list[str] = field(default_factory=list)

    @property
    def code(self) -> int:
        if any(v.gating for v in self.verdicts):
            return EXIT_FAILED
        if self.why_not or any(v.category == TestCategory.UNJUDGED for v in self.verdicts):
            return EXIT_UNJUDGED
        return EXIT_OK

    @property
    def verdict(self) -> str:
        """The verdict line: what the exit code says, in words."""
        base, cand = str(self.baseline.get("name")), str(self.candidate.get("name"))
        if self.why_not:
            return f"Gym's own tests: cannot judge: {self.why_not}"
        ours = [v for v in self.verdicts if v.of == Side.BASELINE]
        counts = Counter(v.category for v in ours)
        judged = counts[TestCategory.PASS_BOTH] + counts[TestCategory.NEWLY_FAILING] + counts[TestCategory.INTERFACE]
        gating = [v for v in ours if v.gating]
        reviewed = sum(1 for v in ours if v.ack)
        fixed = sum(1 for v in self.verdicts if v.of == Side.CANDIDATE and v.category == TestCategory.FIXED)
        tail = f"; {reviewed} reviewed" if reviewed else ""
        tail += f"; {fixed} of {cand}'s fail on {base} (fixed)" if fixed else ""
        if self.code == EXIT_OK:
            return (
                f"Gym's own tests: no regression ({judged - reviewed} of {base}'s {judged} tests pass on {cand}{tail})"
            )
        if self.code == EXIT_FAILED:
            failing = sum(1 for v in gating if v.category == TestCategory.NEWLY_FAILING)
            vanished = len({v.vanished for v in gating if v.category == TestCategory.INTERFACE})
            named = f"{failing} of {base}'s {judged} tests fail on {cand}" + (
                f", {vanished} name(s) they import vanished" if vanished else ""
            )
            return f"Gym's own tests: {named}, unreviewed{tail}"
        unjudged = counts[TestCategory.UNJUDGED] + sum(
            1 for v in self.verdicts if v.of == Side.CANDIDATE and v.category == TestCategory.UNJUDGED
        )
        return f"Gym's own tests: cannot judge: {unjudged} unjudged (a pytest that did not finish; rerun){tail}"

    @classmethod
    def read(cls, folder: Path) -> GymTestsRun:
        """A stored run (its RESULTS_FILE)."""
        data = json.loads((folder / RESULTS_FILE).read_text())
        run = cls(folder, data["baseline"], data["candidate"], data["scope"], seconds=data["seconds"])
        run.why_not, run.stale_acks, run.roots = data["why_not"], data["stale_acks"], data["suites"]
        run.verdicts = [TestVerdict.from_json(t) for t in data["tests"]]
        return run

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "folder": str(self.folder),
            "baseline": self.baseline,
            "candidate": self.candidate,
            "scope": self.scope,
            "code": self.code,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 1),
            "why_not": self.why_not,
            "stale_acks": self.stale_acks,
            "suites": self.roots,
            "tests": [v.to_json() for v in self.verdicts],
        }


def _workers(value: str) -> int:
    return (os.cpu_count() or 1) if value == "auto" else max(1, int(value))


@dataclass
class _Ref:
    name: str
    digest: str  # the ref's content digest (GymSource.digest)
    tree: Path
    env: object  # envs.sync.SyncedEnv
    layer: Path


def _suite(tests: _Ref, code: _Ref, roots: Sequence[Root], folder: Path) -> Suite:
    label = f"{tests.name}-on-{code.name}".replace("/", "_")
    tree = folder / "trees" / label
    config = overlay.build(code.tree, tests.tree, roots, tree)
    return Suite(tests.name, code.name, tree, config, code.env, code.layer)


def judge_gym_tests(
    baseline,
    candidate,
    envs: Sequence[Environment],
    scope: str,
    prepared: dict[str, object],
    folder: Path,
    workers: str = "auto",
    acks: Reviews | None = None,
    reuse: bool = True,
) -> GymTestsRun:
    """Run and judge both releases' tests of `scope` for `envs`. `prepared`: each ref's environment by name;
    `acks`: the reviews whose `[[test]]` and `[[interface]]` entries apply."""
    started = time.monotonic()
    result = GymTestsRun(folder, baseline.to_json(), candidate.to_json(), scope)
    folder.mkdir(parents=True, exist_ok=True)
    roots = roots_for(envs, scope)
    try:
        refs = {}
        for source in (baseline, candidate):
            env = prepared[source.name]
            refs[source.name] = _Ref(
                source.name, source.digest, source_tree(source), env, layer_for(env.python, env.interpreter.version)
            )
    except NoTests as exc:
        result.why_not = str(exc)
        return _finish(result, started)
    a, b = refs[baseline.name], refs[candidate.name]
    n = _workers(workers)
    pairs = {(Side.BASELINE, "own"): (a, a), (Side.BASELINE, "other"): (a, b)}
    pairs |= {(Side.CANDIDATE, "own"): (b, b), (Side.CANDIDATE, "other"): (b, a)}
    suites: dict[tuple[Side, str], Suite] = {}
    runs: dict[tuple[Side, str], SideRuns] = {key: SideRuns() for key in pairs}
    try:
        for key, (tests, code) in pairs.items():
            stored = cached.path(tests, code, roots)
            done = cached.read(stored) if reuse else None
            print(f"gym tests: {tests.name}'s tests on {code.name}'s code" + (" (cached)" if done else ""), flush=True)
            if done is None:
                suites[key] = _suite(tests, code, roots, folder)
                done = run_suite(suites[key], roots, folder / "logs" / suites[key].tree.name, n)
                cached.write(stored, done)
            runs[key].add(done)
            result.roots[f"{tests.name} on {code.name}"] = {r.root.label: _root_summary(r) for r in done}
        labels = {r.path: r.label for r in roots}
        verdicts = _judge(runs, labels)
        confirm = to_confirm(verdicts)
        if confirm:
            print(f"gym tests: confirming {len(confirm)} tests on both releases", flush=True)
            for side in Side:
                only: dict[str, list[str]] = {}
                for v in confirm:
                    if v.of == side:
                        owner = root_of(v.test, roots)
                        only.setdefault(owner.path if owner else "", []).append(v.test)
                for key in ((side, "own"), (side, "other")):
                    if key not in suites:
                        suites[key] = _suite(*pairs[key], roots, folder)
                    for attempt in range(CONFIRMATIONS):
                        logs = folder / "logs" / f"{suites[key].tree.name}.confirm{attempt + 1}"
                        runs[key].add(run_suite(suites[key], roots, logs, n, only=only))
            verdicts = _judge(runs, labels)
        result.verdicts = verdicts
        evidence(verdicts, a.tree, b.tree)
    finally:
        shutil.rmtree(folder / "trees", ignore_errors=True)  # what the tests wrote goes with them; logs stay
    if acks is not None:
        result.stale_acks = gym_acks.apply(acks, result.baseline, result.candidate, result.verdicts)
    return _finish(result, started)


def _judge(runs: dict[tuple[Side, str], SideRuns], labels: dict[str, str]) -> list[TestVerdict]:
    return [v for side in Side for v in judge_side(side, runs[(side, "own")], runs[(side, "other")], labels)]


def _root_summary(run: RootRun) -> dict:
    counts: dict[str, int] = {}
    for test in run.tests.values():
        counts[test.outcome] = counts.get(test.outcome, 0) + 1
    return {
        "status": run.status,
        "seconds": round(run.seconds, 1),
        "tests": counts,
        "uncollected": len(run.uncollected),
    }


def _finish(result: GymTestsRun, started: float) -> GymTestsRun:
    result.seconds = time.monotonic() - started
    write_json_atomic(result.folder / RESULTS_FILE, result.to_json())
    return result
