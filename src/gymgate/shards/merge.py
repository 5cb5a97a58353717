"""Shard runs of one ref combined into one run folder that compares, reports and is served from the cache exactly
like the unsharded run: the same records, the same expected paths, the same inputs digest, the reruns of every
shard. Everything is checked before anything is written: shards of different refs or inputs, overlapping, missing,
repeated or unfinished shards are refused with the runs named (UsageError, exit 2)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.compare.reuse import inputs_digest
from gymgate.errors import UsageError
from gymgate.report.outputs import compared_baseline
from gymgate.rl.profile import consumer_name
from gymgate.runfolder import FINISHED_STATUSES, RunFolder, RunMark, new_run_id
from gymgate.shards.split import Shard


@dataclass
class ShardSet:
    """The shards of one ref, in shard order."""

    ref: str
    digest: str
    runs: list[RunFolder] = field(default_factory=list)
    marks: list[RunMark] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return {run.name for run in self.runs}


def gather(dirs: list[Path]) -> list[ShardSet]:
    """The given runs grouped by ref and checked; refused as a whole if any group cannot be merged."""
    sets: dict[str, ShardSet] = {}
    for directory in dirs:
        run = RunFolder(directory)
        mark = run.mark()
        if mark is None:
            raise UsageError(f"{directory} is not a gymgate run folder (no run.json)")
        source = run.source(required=True)
        key = f"{source.get('name')}@{source.get('digest')}"
        found = sets.setdefault(key, ShardSet(str(source.get("name")), str(source.get("digest"))))
        found.runs.append(run)
        found.marks.append(mark)
    for shard_set in sets.values():
        _check(shard_set)
    return list(sets.values())


def _check(shards: ShardSet) -> None:
    where = f"the shards of {shards.ref}"
    parsed = []
    for run, mark in zip(shards.runs, shards.marks, strict=True):
        if not mark.shard:
            raise UsageError(f"{run.root} is not a shard run (accept --shard K/N); nothing to merge it with")
        parsed.append(Shard.parse(mark.shard))
        if not mark.complete or mark.pytest_exit not in (*FINISHED_STATUSES, None) or mark.incomplete:
            raise UsageError(
                f"{run.root} (shard {mark.shard} of {shards.ref}) did not finish ({mark.incomplete}); rerun it"
            )
    counts = {s.count for s in parsed}
    if len(counts) > 1:
        raise UsageError(f"{where} split it differently ({', '.join(sorted(m.shard for m in shards.marks))})")
    (count,) = counts
    by_index: dict[int, list[RunFolder]] = {}
    for run, shard in zip(shards.runs, parsed, strict=True):
        by_index.setdefault(shard.index, []).append(run)
    twice = {i: runs for i, runs in by_index.items() if len(runs) > 1}
    if twice:
        i, runs = min(twice.items())
        raise UsageError(
            f"shard {i}/{count} of {shards.ref} is given {len(runs)} times: {', '.join(str(r.root) for r in runs)}"
        )
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise UsageError(f"{where} are incomplete: shard(s) {', '.join(missing)} missing")
    shared = {m.shared_inputs for m in shards.marks}
    if len(shared) > 1 or "" in shared:
        raise UsageError(
            f"{where} were run with different inputs (lock, Python, gymgate's code or cases): "
            + ", ".join(
                f"{r.name}={m.shared_inputs[:12] or 'none'}" for r, m in zip(shards.runs, shards.marks, strict=True)
            )
        )
    seen: dict[str, str] = {}
    for run, mark in zip(shards.runs, shards.marks, strict=True):
        for path in mark.expected:
            if path in seen:
                raise UsageError(f"{where} overlap: {path} is in both {seen[path]} and {run.name}")
            seen[path] = run.name
    order = sorted(range(len(parsed)), key=lambda i: parsed[i].index)
    shards.runs = [shards.runs[i] for i in order]
    shards.marks = [shards.marks[i] for i in order]


def merge(shards: ShardSet, base: Path) -> RunFolder:
    """Write the merged run of one ref under `base`; its reruns keep the baseline they were made against until the
    caller names the merged baseline (`point_reruns_at`)."""
    run_id = new_run_id()
    merged = RunFolder.create(f"{shards.ref}-merged", run_id, base)
    first = shards.runs[0]
    merged.write_source(first.source(required=True))
    merged.keep_environment(first.lock, first.environment())
    for number, run in enumerate(shards.runs, start=1):
        merged.take_files_of(run, worker_prefix=f"shard{number}-")
    _merge_reruns(shards, merged)
    marks = shards.marks
    expected = [p for mark in marks for p in mark.expected]
    shared = marks[0].shared_inputs
    broken = [m.broken for m in marks if m.broken]
    plan = [p for run in shards.runs for p in run.plan() or []]  # each shard ran its environments' paths
    merged.write_plan(plan)
    consumers = {json.dumps(run.consumer(), sort_keys=True) for run in shards.runs}
    if len(consumers) > 1:
        raise UsageError(
            f"the shards were judged as different RL profiles ({', '.join(sorted(consumers))}): rerun them"
        )
    consumer = shards.runs[0].consumer()
    if consumer:
        merged.write_consumer(consumer)
    merged.write_mark(
        RunMark(
            expected=expected,
            complete=True,
            run_id=run_id,
            inputs=inputs_digest(shared, expected, plan=plan, consumer=consumer_name(consumer)),
            started=min((m.started for m in marks if m.started is not None), default=None),
            finished=max((m.finished for m in marks if m.finished is not None), default=None),
            pytest_exit=max((m.pytest_exit for m in marks if m.pytest_exit is not None), default=None),
            broken=broken[0] if broken and len(broken) == len(marks) else "",
            lifecycle=[f"{r.name}: {p}" for r, m in zip(shards.runs, marks, strict=True) for p in m.lifecycle],
            shared_inputs=shared,
            merged_from=[r.name for r in shards.runs],
        )
    )
    return merged


def _merge_reruns(shards: ShardSet, merged: RunFolder) -> None:
    """Every shard's attempts, attempt by attempt: attempt n of the merged run holds attempt n of each shard."""
    manifests = [(run, run.reruns_manifest()) for run in shards.runs]
    manifests = [(run, m) for run, m in manifests if m]
    if not manifests:
        return
    for run, _ in manifests:
        for role, n, attempt in run.attempts():
            target = merged.attempt(role, n)
            target.root.mkdir(parents=True, exist_ok=True)
            target.take_files_of(attempt, worker_prefix=f"{run.name}-")
            source = attempt.source()
            if source:
                target.write_source(source)
            theirs = attempt.mark() or RunMark()
            ours = target.mark()
            if ours is None:
                ours = RunMark(complete=theirs.complete, run_id=theirs.run_id, incomplete=theirs.incomplete)
            else:
                ours.complete = ours.complete and theirs.complete
                ours.incomplete = ours.incomplete or theirs.incomplete
            ours.expected = [*ours.expected, *theirs.expected]
            target.write_mark(ours)
    merged.write_reruns_manifest(
        {
            "baseline_run": "",  # named by point_reruns_at once the baseline's shards are merged too
            "attempts": max(int(m.get("attempts", 0)) for _, m in manifests),
            "paths": sorted({p for _, m in manifests for p in m.get("paths", [])}),
            "done": max(int(m.get("done", 1)) for _, m in manifests),
        }
    )


def point_reruns_at(candidate: RunFolder, baseline: RunFolder) -> None:
    """The merged candidate's baseline attempts count against the merged baseline (compare/attempts.py matches the
    baseline run by name)."""
    manifest = candidate.reruns_manifest()
    if manifest is not None:
        candidate.write_reruns_manifest({**manifest, "baseline_run": baseline.name})


def baseline_of(sets: list[ShardSet]) -> tuple[ShardSet, ShardSet]:
    """(baseline, candidate) of two shard sets: the candidate's shards were compared against the baseline's (their
    results.json, or their reruns, name those runs)."""

    def referenced(shard_set: ShardSet) -> set[str]:
        names = set()
        for run in shard_set.runs:
            found = compared_baseline(run.root)
            if found is not None:
                names.add(found.name)
            manifest = run.reruns_manifest() or {}
            if manifest.get("baseline_run"):
                names.add(str(manifest["baseline_run"]))
        return names

    a, b = sets
    if referenced(b) & a.names and not referenced(a) & b.names:
        return a, b
    if referenced(a) & b.names and not referenced(b) & a.names:
        return b, a
    raise UsageError(
        f"cannot tell which of {a.ref} and {b.ref} is the baseline: neither's shards were compared against the "
        "other's (merge each ref alone, then `nox -s compare -- BASELINE CANDIDATE`)"
    )
