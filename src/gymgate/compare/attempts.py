"""Every attempt of each path, read back for the comparison and the reruns: the attempts a record holds (the same
Gym, `PathRecord.repeats`) and the stored reruns in fresh Gyms (harness/reruns.py writes them; the layout,
reruns/reruns.json and reruns/<role>-<n>/, is the run folder's: runfolder/folder.py)."""

from __future__ import annotations

from pathlib import Path

from gymgate.outcomes import PASS
from gymgate.runfolder import PathRecord, RunFolder
from gymgate.verdict import known_defect, label


def labels(run: RunFolder) -> dict[str, str | None]:
    """Each path's first attempt's label (gymgate.verdict.label), expected paths without a record included."""
    return {path: label(record) for path, record in run.records().items()}


def attempt_labels(run: RunFolder) -> dict[str, list[str | None]]:
    """Each path's label of every attempt its record holds, in order."""
    return {path: [label(a) for a in record.attempt_records()] for path, record in run.records().items()}


def alone_labels(run: RunFolder) -> list[str | None]:
    """Every attempt's label as the run judged alone reads it: a known defect passes there (gymgate.verdict)."""
    return [
        PASS if known_defect(a) else label(a) for record in run.records().values() for a in record.attempt_records()
    ]


def load_attempts(candidate_dir: Path, baseline_dir: Path | None) -> dict[str, dict[str, list[PathRecord]]]:
    """The stored reruns of a candidate run, every attempt of each: {"candidate": {path: [records]}, "baseline":
    {...}}. Baseline attempts count only against the baseline run they were made for; unfinished attempt folders
    are ignored."""
    found: dict[str, dict[str, list[PathRecord]]] = {"candidate": {}, "baseline": {}}
    candidate = RunFolder(candidate_dir)
    manifest = candidate.reruns_manifest()
    if manifest is None:
        return found
    for role, _, attempt in candidate.attempts():
        if role == "baseline" and (baseline_dir is None or manifest.get("baseline_run") != baseline_dir.name):
            continue
        mark = attempt.mark()
        if role not in found or mark is None or not mark.complete:
            continue
        for path, record in attempt.records().items():
            found[role].setdefault(path, []).extend(record.attempt_records())
    return found
