"""The suite cache (Bazel's action cache): a suite's first run is stored under the digest of everything that decides
it (the tests' tree and the code's ref, the environment, the test layer, the roots, gymgate's own runner) and served
again instead of running. Only a run whose every root finished is stored; confirmations always run afresh, so a test
whose category rests on a stored run is run again before it is reported."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from gymgate.atomic import write_json_atomic
from gymgate.gymtests.execute import ABSENT, FINISHED, NO_TESTS, RootRun
from gymgate.gymtests.roots import Root
from gymgate.locations import PACKAGE_DIR, cache_dir
from gymgate.refs.local import tree_digest

FORMAT = "1"
KEPT = (FINISHED, NO_TESTS, ABSENT)


def path(tests, code, roots: Sequence[Root]) -> Path:
    """Where the suite of `tests`' tests over `code`'s code (gymtests.bump._Ref each) is stored."""
    parts = {
        "format": FORMAT,
        "tests": [tests.digest, str(tests.tree)],
        "code": [code.digest, str(code.tree), code.env.key],
        "layer": code.layer.name,
        "roots": [r.path for r in roots],
        "runner": tree_digest(PACKAGE_DIR / "gymtests"),
    }
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]
    return cache_dir() / "gymtests" / f"{key}.json"


def read(stored: Path) -> list[RootRun] | None:
    try:
        return [RootRun.from_json(item) for item in json.loads(stored.read_text())]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: run it


def write(stored: Path, runs: Sequence[RootRun]) -> None:
    if all(r.status in KEPT for r in runs):
        write_json_atomic(stored, [r.to_json() for r in runs])
