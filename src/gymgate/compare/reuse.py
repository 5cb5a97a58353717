"""The result cache: a stored run is served again instead of running a ref when every input that can change its
results is the same (Bazel's action key): the Gym's digest, the lock, the interpreter, gymgate's own code (the
in-environment session included), the cases, and the selected paths. Only a clean run is served: every path PASS
or SKIP on every attempt, the attempts of each path agreeing, the session finished, nothing outlived it. A run with a FAIL, an ERROR (whoever is to blame), a missing
record, a lifecycle problem, or that was interrupted is never served: a red result is always looked at again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gymgate.compare.attempts import alone_labels
from gymgate.compare.stability import disagreement
from gymgate.errors import UsageError
from gymgate.locations import PACKAGE_DIR, case_dirs
from gymgate.options import default
from gymgate.outcomes import PASS, SKIP
from gymgate.refs.local import tree_digest
from gymgate.runfolder import FINISHED_STATUSES, RunFolder
from gymgate.runfolder.folder import stored_runs

CLEAN = {PASS, SKIP}  # the labels a run served from the cache may hold


def shared_digest(gym_digest: str, lock: Path, python: str) -> str:
    """Every input but the path selection: what the shards of one run share (shards/merge.py checks it)."""
    digest = hashlib.sha256()
    for part in (
        gym_digest,
        hashlib.sha256(lock.read_bytes()).hexdigest(),
        python,
        tree_digest(PACKAGE_DIR),
        *(tree_digest(folder) for folder in case_dirs()),  # gymgate's cases and the repository's own
    ):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def inputs_digest(
    shared: str,
    selection: list[str],
    attempts: int = default("attempts"),
    plan: Iterable[Any] = (),
    consumer: str = default("rl_profile"),
) -> str:
    """The cache key: the shared inputs, the selected paths (in any order), the attempts per path, which RL the
    paths are judged as (`consumer`: the RL profile's name) and every planned path whole (its script, row and
    everything it is held to: a path id names a recording's content, not its row's)."""
    digest = hashlib.sha256(f"{shared}\0{','.join(sorted(selection))}\0{attempts}\0{consumer}\0".encode())
    for path in sorted(json.dumps(p, sort_keys=True) for p in plan):
        digest.update(path.encode() + b"\0")
    return digest.hexdigest()


def unstable(run: RunFolder) -> bool:
    """Some path's attempts disagreed with each other (compare/stability.py): red, whatever the labels say."""

    return any(disagreement(r.attempt_records()) is not None for r in run.records().values())


def find_cached(runs_dir: Path, digest: str, since: float = 0.0) -> RunFolder | None:
    """The newest clean, complete run with exactly these inputs, or None. Folders of another gymgate version, or
    damaged, are passed over. `since` (> 0): a complete run with these inputs that started at or after it is served
    whatever its verdict — the same invocation asking again for what it just ran (nox's matrix sessions), never an
    older red run."""

    candidates = []
    for run in stored_runs(runs_dir):
        try:
            mark = run.mark()
        except UsageError:
            continue
        if mark is None or not mark.complete or mark.inputs != digest or mark.pytest_exit not in FINISHED_STATUSES:
            continue
        ours = since > 0 and (mark.started or 0) >= since
        if not ours and (run.lifecycle_failures() or not set(alone_labels(run)) <= CLEAN or unstable(run)):
            continue
        candidates.append((mark.finished or 0, str(run.root), run))
    return max(candidates)[2] if candidates else None
