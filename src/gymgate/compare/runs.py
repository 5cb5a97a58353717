"""Two stored runs -> one Comparison: a category per path, every change of what the model received and what Gym
returned on paths that pass on both (contract or additive, acknowledged or not), the lock diff, a verdict.
The analyzer never formats (report/ renders it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gymgate.compare import acks as ack_files
from gymgate.compare.attempts import load_attempts
from gymgate.compare.lockdiff import LockDiff, diff
from gymgate.compare.observation import ABSENT, CONTRACT, Change, reviewed_rules, rules
from gymgate.compare.observation import diff as observation_diff
from gymgate.compare.stability import Disagreement, disagreement
from gymgate.errors import UsageError
from gymgate.outcomes import BROKEN, ERROR, HARNESS, PASS, SKIP
from gymgate.refs.source import nemo_gym_label
from gymgate.rl.profile import Profile, consumer_name
from gymgate.rl.profile import load as load_profile
from gymgate.runfolder import PathRecord, RunFolder, RunMark
from gymgate.text import mask_volatile
from gymgate.verdict import (
    CHANGED,
    FLAKY,
    REGRESSED,
    SAME_PASS,
    categorize,
    comparison_exit,
    comparison_verdict,
    flaky_side,
    label,
)

OBSERVED = "observed"  # the record field holding a path's full observation (PathRecord.observe)
NONDETERMINISTIC_CAUSE = "[nondeterministic]"  # the root-cause tag of a candidate that disagrees with itself
CHANGED_CAUSE = "[changed]"  # the root-cause tag of an unacknowledged contract change
# The root cause a regressed path without a baseline leads with: its environment or recording is new in the candidate
# and does not pass there (red, as the table says, but not something the bump broke in a working path).
NEW_CAUSE = "[new] not on the baseline, does not pass on the candidate"


@dataclass
class PathComparison:
    path: str
    baseline: str | None  # outcome of the first run on each side
    candidate: str | None
    category: str
    reason: str = ""
    blame: str = ""  # who is to blame for the candidate's ERROR (or contract FAIL)
    changes: list[Change] = field(default_factory=list)  # PASS on both: every leaf that differs
    # Every attempt's label, the first run included: {"baseline": [...], "candidate": [...]}.
    attempts: dict[str, list[str | None]] = field(default_factory=dict)
    causes: list[str] = field(default_factory=list)  # root-cause keys of the candidate's failure
    flaky_on: str = ""  # for flaky paths: baseline or both (the candidate alone is regressed)
    # Each side whose attempts disagreed with each other (compare/stability.py): "baseline" / "candidate".
    disagreements: dict[str, Disagreement] = field(default_factory=dict)

    @property
    def nondeterministic_on_candidate(self) -> bool:
        """Regressed because the candidate disagreed with itself where the baseline did not."""
        return "candidate" in self.disagreements and "baseline" not in self.disagreements

    @property
    def additive_only(self) -> bool:
        """Every change is a key the candidate's result adds (nothing a reviewer must acknowledge)."""
        return bool(self.changes) and all(c.kind != CONTRACT for c in self.changes)


@dataclass
class ChangeGroup:
    """One change as a reviewer reads it: the same field (indices folded) with the same values on several paths."""

    field: str
    sample: Change  # one of the identical changes: its class, values and acknowledgement are the group's
    paths: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.sample.kind

    @property
    def ack(self) -> str:
        return self.sample.ack

    @property
    def ack_file(self) -> str:
        return self.sample.ack_file

    @property
    def failing(self) -> bool:
        return self.kind == CONTRACT and not self.ack


@dataclass
class Comparison:
    """Everything every rendering (terminal, report.md, report.html, results.json, junit.xml, retry.txt) shows."""

    baseline: dict[str, Any]
    candidate: dict[str, Any]
    paths: list[PathComparison]
    locks: LockDiff | None
    baseline_broken: str = ""
    candidate_broken: str = ""
    baseline_records: dict[str, PathRecord] = field(default_factory=dict)
    candidate_records: dict[str, PathRecord] = field(default_factory=dict)
    # What did not stop within its bounds (and was killed), per side.
    lifecycle: dict[str, list[str]] = field(default_factory=dict)
    acks: ack_files.AckReport = field(default_factory=ack_files.AckReport)
    # What the candidate's run judged of Gym's own tests against this baseline (`accept --gym-tests`), if it did:
    # shown beside the paths' verdict, its own verdict (harness/gym_tests.py combines the exit codes).
    gym_tests: dict[str, Any] | None = None
    # Which RL both runs were judged as (gymgate.rl.profile: each run's rl.json); a report names it, and it tags every
    # change by how that RL uses the leaf.
    profile: Profile = field(default_factory=load_profile)
    recipe: str = ""  # the training recipe whose penalties were applied (--rl-recipe), if any

    def by_category(self) -> dict[str, list[PathComparison]]:
        groups: dict[str, list[PathComparison]] = {}
        for path in self.paths:
            groups.setdefault(path.category, []).append(path)
        return groups

    @property
    def changed(self) -> list[PathComparison]:
        """Paths that pass on both refs with anything changed (contract or additive, acknowledged or not)."""
        return [p for p in self.paths if p.category in (SAME_PASS, CHANGED) and p.changes]

    def change_groups(self) -> list[ChangeGroup]:
        """Every change on paths passing on both refs, grouped across paths: unacknowledged contract changes first,
        then acknowledged ones, then additive ones; within each, the most widespread first."""
        groups: dict[tuple[str, str, str], ChangeGroup] = {}
        for item in self.changed:
            for change in item.changes:
                # An acknowledgement names its paths: the same change covered on some paths and not on others is two
                # groups, so the uncovered ones are never shown (or drafted) as reviewed.
                key = (ack_files.match_key(change), change.ack, change.ack_file)
                group = groups.setdefault(key, ChangeGroup(ack_files.fold(change.field), change))
                if item.path not in group.paths:
                    group.paths.append(item.path)
        order = {True: 0, False: 1}
        return sorted(
            groups.values(),
            key=lambda g: (order[g.failing], g.kind != CONTRACT, -len(g.paths), g.field),
        )

    @property
    def exit_code(self) -> int:
        return comparison_exit(self)  # decided in gymgate.verdict

    @property
    def verdict(self) -> str:
        return comparison_verdict(self)


def _load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, PathRecord], RunMark]:
    run = RunFolder(run_dir)
    if not run.paths_dir.is_dir():
        raise UsageError(f"{run_dir} is not a gymgate run folder (no paths/)")
    mark = run.mark()
    if mark is None or not mark.complete:
        why = (mark.incomplete or "run.json says incomplete") if mark else "it has no run.json"
        raise UsageError(f"{run_dir} did not finish ({why}); it cannot be compared — rerun it")
    return {"dir": str(run_dir), **run.source(required=True)}, run.records(), mark


def judged_as(baseline: RunFolder, candidate: RunFolder, broken: tuple[bool, bool] = (False, False)) -> Profile:
    """The RL profile both runs were judged as; two runs judged as different RLs are not compared (a verdict would
    mix two consumers' rules). A BROKEN side judged nothing: the other's decides."""
    names = {role: consumer_name(run.consumer()) for role, run in (("baseline", baseline), ("candidate", candidate))}
    if broken[1]:
        return load_profile(names["baseline"].split("+")[0])
    if names["baseline"] != names["candidate"] and not broken[0]:
        raise UsageError(
            f"the baseline {baseline.root} was judged as RL profile {names['baseline']} and the candidate "
            f"{candidate.root} as {names['candidate']}: rerun one with --rl-profile (and --rl-recipe) so both are "
            "judged as one RL"
        )
    return load_profile(names["candidate"].split("+")[0])


def _never_started(records: dict[str, PathRecord], attempts: dict[str, list[PathRecord]]) -> str:
    """A ref none of whose environments ever started (every attempt of every judged path a startup ERROR blamed on
    Gym) is BROKEN: it says nothing about paths, only that this Gym cannot run here."""
    judged = [r for r in records.values() if r.outcome != SKIP]
    startup = [r for r in judged if r.outcome == ERROR and r.blame != HARNESS and r.reason.startswith("startup")]
    if not judged or len(startup) != len(judged):
        return ""
    if any(a.outcome != ERROR for r in judged for a in attempts.get(r.path, [])):
        return ""
    return f"no environment could start: {startup[0].reason}"


def _attempts_of(record: PathRecord, reruns: list[PathRecord], broken: bool) -> list[PathRecord]:
    """Every attempt of one path on one ref, in the order they ran: the record's own (the same Gym), then the
    reruns' (fresh Gyms). A BROKEN ref's first attempt is its BROKEN record."""
    return [record, *reruns] if broken else [*record.attempt_records(), *reruns]


def _break(records: dict[str, PathRecord]) -> dict[str, PathRecord]:
    return {k: (replace(r, outcome=BROKEN) if r.outcome != SKIP else r) for k, r in records.items()}


def _changes(a: PathRecord, b: PathRecord) -> list[Change]:
    """Every difference between two passing records' full observations. A record without one cannot be shown to
    be unchanged: that is itself a contract change."""
    if not a.observed or not b.observed:
        shown = ["recorded" if r.observed else ABSENT for r in (a, b)]
        return [Change(OBSERVED, shown[0], shown[1], CONTRACT)]
    return observation_diff(a.observed, b.observed, rules() + reviewed_rules(a.fidelity, b.fidelity))


def compare_runs(baseline_dir: Path, candidate_dir: Path, acks: ack_files.Reviews | None = None) -> Comparison:
    """Read both runs (and the candidate's reruns) from disk once; every rendering works from the result.
    `acks_dir` holds the reviewed acknowledgements (default: the checkout's acks/)."""
    base_info, base, base_mark = _load_run(baseline_dir)
    cand_info, cand, cand_mark = _load_run(candidate_dir)
    reruns = load_attempts(candidate_dir, baseline_dir)
    base_broken = base_mark.broken or _never_started(base, reruns["baseline"])
    cand_broken = cand_mark.broken or _never_started(cand, reruns["candidate"])
    base, cand = (_break(base) if base_broken else base), (_break(cand) if cand_broken else cand)
    paths, evidences = [], {}
    broken = {"baseline": bool(base_broken), "candidate": bool(cand_broken)}
    for name in sorted(set(base) | set(cand)):
        a, b = base.get(name), cand.get(name)
        records = {
            role: _attempts_of(record, reruns[role].get(name, []), broken[role])
            for role, record in (("baseline", a), ("candidate", b))
            if record is not None
        }
        attempts = {role: [label(r) for r in history] for role, history in records.items()}
        disagreements = {role: d for role, history in records.items() if (d := disagreement(history)) is not None}
        unstable = ("baseline" in disagreements, "candidate" in disagreements)
        evidence = (label(a), label(b), attempts.get("candidate"), attempts.get("baseline"), unstable)
        category = categorize(*evidence)
        item = PathComparison(
            name,
            a.outcome if a else None,
            b.outcome if b else None,
            category,
            reason=(b or a).reason if (b or a) else "",
            blame=b.blame if b else "",
            attempts=attempts,
            disagreements=disagreements,
        )
        evidences[name] = evidence
        if category == FLAKY:
            item.flaky_on = flaky_side(*unstable)
        if b is not None and b.outcome != PASS and (b.outcome != SKIP or category == REGRESSED):
            item.causes = root_causes(b)
            if category == REGRESSED and label(a) in (SKIP, None) and not unstable[1]:
                item.causes = [NEW_CAUSE, *item.causes]
        if disagreements:  # the first reason line says it, the candidate's first
            lines = [disagreements[role].line(role) for role in ("candidate", "baseline") if role in disagreements]
            item.reason = "\n".join([*lines, *([item.reason] if item.reason else [])])
        if item.nondeterministic_on_candidate:
            item.causes = [f"{NONDETERMINISTIC_CAUSE} {ack_files.fold(disagreements['candidate'].field)}", *item.causes]
        if a and b and item.category == SAME_PASS:
            item.changes = _changes(a, b)
        paths.append(item)
    pair_changes = {p.path: p.changes for p in paths}
    report = ack_files.covered_by((acks or ack_files.Reviews()).steps(), base_info, cand_info, pair_changes)
    for item in paths:  # the reviews are in: an unacknowledged contract change is judged by the table too
        if any(c.kind == CONTRACT and not c.ack for c in item.changes):
            item.category = categorize(*evidences[item.path], changed=True)
            item.causes = sorted(
                {f"{CHANGED_CAUSE} {ack_files.fold(c.field)}" for c in item.changes if c.kind == CONTRACT and not c.ack}
            )
    base_run, cand_run = RunFolder(baseline_dir), RunFolder(candidate_dir)
    locks = None
    if base_run.lock.is_file() and cand_run.lock.is_file():
        locks = diff(base_run.lock, cand_run.lock, (nemo_gym_label(base_info), nemo_gym_label(cand_info)))
    lifecycle = {"baseline": base_run.lifecycle_failures(), "candidate": cand_run.lifecycle_failures()}
    comparison = Comparison(base_info, cand_info, paths, locks, base_broken, cand_broken, base, cand, lifecycle, report)
    comparison.profile = judged_as(base_run, cand_run, (bool(base_broken), bool(cand_broken)))
    comparison.recipe = str(cand_run.consumer().get("recipe") or "")
    comparison.gym_tests = RunFolder(candidate_dir).gym_tests(str(base_info.get("digest")))
    return comparison


def root_causes(record: PathRecord) -> list[str]:
    """What a failing path broke, as keys shared across paths: `[kind] field` per failed check, or
    `[blame] <first line of the reason>` (numbers masked) for an ERROR, an absent environment or BROKEN."""
    if record.failures:
        return sorted({f"[{f.kind}] {mask_volatile(f.field)}" for f in record.failures})
    reason = record.reason.splitlines()[0] if record.reason else ""
    tag = {SKIP: "removed", BROKEN: "broken"}.get(record.outcome, record.blame or "error")
    return [f"[{tag}] {mask_volatile(reason)[:160]}"] if reason else [f"[{tag}] {record.outcome}"]
