"""Stored reruns of a candidate run, read back for the comparison. matrix/reruns.py writes them:

<candidate>/reruns/reruns.json            which baseline run, which paths, how many attempts
<candidate>/reruns/candidate-<n>/paths/   attempt n (n >= 2; attempt 1 is the run itself)
<candidate>/reruns/baseline-<n>/paths/
"""

from __future__ import annotations

import json
from pathlib import Path

from gymgate.compare.categories import label
from gymgate.runfolder import load_records, read_mark

RERUNS_DIR = "reruns"
MANIFEST = "reruns.json"


def labels(run_dir: Path) -> dict[str, str | None]:
    """Each path's label (compare.categories.label), expected paths without a record included."""
    return {path: label(record) for path, record in load_records(run_dir).items()}


def load_attempts(candidate_dir: Path, baseline_dir: Path | None) -> dict[str, dict[str, list[str | None]]]:
    """The stored reruns of a candidate run: {"candidate": {path: [n>=2 outcomes]}, "baseline": {...}}. Baseline
    attempts count only against the baseline run they were made for; unfinished attempt folders are ignored."""
    found: dict[str, dict[str, list[str | None]]] = {"candidate": {}, "baseline": {}}
    folder = candidate_dir / RERUNS_DIR
    if not (folder / MANIFEST).is_file():
        return found
    manifest = json.loads((folder / MANIFEST).read_text())
    for attempt in sorted(folder.glob("*-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])):
        role = attempt.name.rsplit("-", 1)[0]
        if role == "baseline" and (baseline_dir is None or manifest.get("baseline_run") != baseline_dir.name):
            continue
        if role not in found or not read_mark(attempt).get("complete"):
            continue
        for path, got in labels(attempt).items():
            found[role].setdefault(path, []).append(got)
    return found
