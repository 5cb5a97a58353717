"""Stored reruns of a candidate run, read back for the comparison (matrix/reruns.py writes them; the layout,
reruns/reruns.json and reruns/<role>-<n>/, is the run folder's: runfolder/folder.py)."""

from __future__ import annotations

from pathlib import Path

from gymgate.compare.categories import label
from gymgate.runfolder import RunFolder


def labels(run: RunFolder) -> dict[str, str | None]:
    """Each path's label (compare.categories.label), expected paths without a record included."""
    return {path: label(record) for path, record in run.records().items()}


def load_attempts(candidate_dir: Path, baseline_dir: Path | None) -> dict[str, dict[str, list[str | None]]]:
    """The stored reruns of a candidate run: {"candidate": {path: [n>=2 outcomes]}, "baseline": {...}}. Baseline
    attempts count only against the baseline run they were made for; unfinished attempt folders are ignored."""
    found: dict[str, dict[str, list[str | None]]] = {"candidate": {}, "baseline": {}}
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
        for path, got in labels(attempt).items():
            found[role].setdefault(path, []).append(got)
    return found
