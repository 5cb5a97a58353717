"""Reusing a stored baseline run: a run is reused only when every input that can change its results is the
same (Bazel's action key): the Gym's digest, the lock, the interpreter, gymgate's own code (the in-environment
session included), the cases, and the selected paths. Interrupted or unjudged runs, and runs where gymgate itself failed, are
never reused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gymgate.paths import PACKAGE_DIR, repo_root
from gymgate.refs.local import tree_digest


def inputs_digest(gym_digest: str, lock: Path, python: str, selection: list[str]) -> str:
    digest = hashlib.sha256()
    for part in (
        gym_digest,
        hashlib.sha256(lock.read_bytes()).hexdigest(),
        python,
        tree_digest(PACKAGE_DIR),
        tree_digest(repo_root() / "cases"),
        ",".join(sorted(selection)),
    ):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def find_reusable(runs_dir: Path, digest: str) -> Path | None:
    """The newest complete, judged run with exactly these inputs, in which gymgate itself did not fail (no harness
    error, no missing record, no lifecycle problem): such a run is rerun, never reused."""
    from gymgate.compare.attempts import labels
    from gymgate.compare.categories import HARNESS_ERROR, NO_RECORD
    from gymgate.runfolder import lifecycle_failures

    candidates = []
    for mark in runs_dir.glob("*/run.json"):
        try:
            data = json.loads(mark.read_text())
        except (OSError, ValueError):
            continue
        if data.get("complete") and data.get("inputs") == digest and data.get("pytest_exit") in (0, 1):
            run = mark.parent
            if data.get("lifecycle") or lifecycle_failures(run):
                continue
            if {HARNESS_ERROR, NO_RECORD} & set(labels(run).values()):
                continue
            candidates.append((data.get("finished", 0), run))
    return max(candidates)[1] if candidates else None
