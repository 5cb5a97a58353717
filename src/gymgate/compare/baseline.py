"""Reusing a stored baseline run: a run is reused only when every input that can change its results is the
same (Bazel's action key): the Gym's digest, the lock, the interpreter, gymgate's own code (the in-environment
session included), the cases, and the selected paths. Interrupted or unjudged runs, and runs where gymgate itself failed, are
never reused."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.locations import PACKAGE_DIR, repo_root
from gymgate.refs.local import tree_digest
from gymgate.runfolder import FINISHED_STATUSES, RunFolder
from gymgate.runfolder.folder import stored_runs


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


def find_reusable(runs_dir: Path, digest: str) -> RunFolder | None:
    """The newest complete, judged run with exactly these inputs, in which gymgate itself did not fail (no harness
    error, no missing record, no lifecycle problem): such a run is rerun, never reused. Folders of another gymgate
    version, or damaged, are passed over."""
    from gymgate.compare.attempts import labels
    from gymgate.compare.categories import HARNESS_ERROR, NO_RECORD

    candidates = []
    for run in stored_runs(runs_dir):
        try:
            mark = run.mark()
        except UsageError:
            continue
        if mark is None or not mark.complete or mark.inputs != digest or mark.pytest_exit not in FINISHED_STATUSES:
            continue
        if run.lifecycle_failures() or {HARNESS_ERROR, NO_RECORD} & set(labels(run).values()):
            continue
        candidates.append((mark.finished or 0, str(run.root), run))
    return max(candidates)[2] if candidates else None
