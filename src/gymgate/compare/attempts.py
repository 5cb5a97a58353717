"""Stored reruns of a candidate run, read back for the comparison. matrix/reruns.py writes them:

<candidate>/reruns/reruns.json            which baseline run, which paths, how many attempts
<candidate>/reruns/candidate-<n>/paths/   attempt n (n >= 2; attempt 1 is the run itself)
<candidate>/reruns/baseline-<n>/paths/
"""

from __future__ import annotations

import json
from pathlib import Path

RERUNS_DIR = "reruns"
MANIFEST = "reruns.json"


def outcomes(run_dir: Path) -> dict[str, str]:
    return {
        record["path"]: record["outcome"]
        for record in (json.loads(p.read_text()) for p in sorted((run_dir / "paths").glob("*.json")))
    }


def load_attempts(candidate_dir: Path, baseline_dir: Path | None) -> dict[str, dict[str, list[str]]]:
    """The stored reruns of a candidate run: {"candidate": {path: [n>=2 outcomes]}, "baseline": {...}}. Baseline
    attempts count only against the baseline run they were made for; unfinished attempt folders are ignored."""
    found: dict[str, dict[str, list[str]]] = {"candidate": {}, "baseline": {}}
    folder = candidate_dir / RERUNS_DIR
    if not (folder / MANIFEST).is_file():
        return found
    manifest = json.loads((folder / MANIFEST).read_text())
    for attempt in sorted(folder.glob("*-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])):
        role = attempt.name.rsplit("-", 1)[0]
        if role == "baseline" and (baseline_dir is None or manifest.get("baseline_run") != baseline_dir.name):
            continue
        mark = attempt / "run.json"
        if role not in found or not mark.is_file() or not json.loads(mark.read_text()).get("complete"):
            continue
        for path, outcome in outcomes(attempt).items():
            found[role].setdefault(path, []).append(outcome)
    return found
