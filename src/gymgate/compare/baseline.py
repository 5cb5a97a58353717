"""Reusing a stored baseline run: a run is reused only when every input that can change its results is the
same (Bazel's action key): the Gym's digest, the lock, the interpreter, gymgate's own code, the cases and the
acceptance tests, and the selected paths. Interrupted or unjudged runs are never reused."""

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
        tree_digest(repo_root() / "tests" / "acceptance"),
        ",".join(sorted(selection)),
    ):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def find_reusable(runs_dir: Path, digest: str) -> Path | None:
    """The newest complete, judged run with exactly these inputs."""
    candidates = []
    for mark in runs_dir.glob("*/run.json"):
        try:
            data = json.loads(mark.read_text())
        except (OSError, ValueError):
            continue
        if data.get("complete") and data.get("inputs") == digest and data.get("pytest_exit") in (0, 1):
            candidates.append((data.get("finished", 0), mark.parent))
    return max(candidates)[1] if candidates else None
