"""Two stored runs -> one Comparison: a category per path, the fields that changed, the lock diff, a verdict.
The analyzer never formats (report/ renders it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate.compare.categories import BROKEN_CATEGORY, REGRESSED, SAME_PASS, categorize
from gymgate.compare.lockdiff import LockDiff, diff
from gymgate.errors import EXIT_FAILED, EXIT_OK, UsageError

# Record fields whose change on a PASS->PASS path is reported (not hidden) as "changed".
COMPARED_FIELDS = ("verifier", "tokens", "request_contract", "tools", "result_fields", "reward")


@dataclass
class PathComparison:
    path: str
    baseline: str | None
    candidate: str | None
    category: str
    reason: str = ""
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)


@dataclass
class Comparison:
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    paths: list[PathComparison]
    locks: LockDiff | None

    def by_category(self) -> dict[str, list[PathComparison]]:
        groups: dict[str, list[PathComparison]] = {}
        for path in self.paths:
            groups.setdefault(path.category, []).append(path)
        return groups

    @property
    def changed(self) -> list[PathComparison]:
        return [p for p in self.paths if p.category == SAME_PASS and p.changed]

    @property
    def exit_code(self) -> int:
        bad = {REGRESSED, BROKEN_CATEGORY}
        return EXIT_FAILED if any(p.category in bad for p in self.paths) else EXIT_OK

    @property
    def verdict(self) -> str:
        groups = self.by_category()
        if self.exit_code == EXIT_OK:
            return f"no regression ({len(groups.get(SAME_PASS, []))} paths pass on both, {len(self.changed)} changed)"
        return f"{len(groups.get(REGRESSED, []))} regressed, {len(groups.get(BROKEN_CATEGORY, []))} broken"


def _load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict]]:
    if not (run_dir / "paths").is_dir():
        raise UsageError(f"{run_dir} is not a gymgate run folder (no paths/)")
    mark = run_dir / "run.json"
    if mark.is_file() and not json.loads(mark.read_text()).get("complete"):
        raise UsageError(f"{run_dir} is an interrupted run (run.json says incomplete); it cannot be compared")
    source = json.loads((run_dir / "source.json").read_text()) if (run_dir / "source.json").is_file() else {}
    records = {}
    for path in sorted((run_dir / "paths").glob("*.json")):
        record = json.loads(path.read_text())
        records[record["path"]] = record
    return {"dir": str(run_dir), **source}, records


def _flatten(prefix: str, value: Any) -> dict[str, Any]:
    """Nested dicts and lists of dicts to dotted leaves (`tokens.turns.0.prompt`); scalar lists stay whole."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(f"{prefix}.{key}", inner))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for index, inner in enumerate(value):
            out.update(_flatten(f"{prefix}.{index}", inner))
        return out
    return {prefix: value}


def _changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    changes: dict[str, tuple[Any, Any]] = {}
    for name in COMPARED_FIELDS:
        left, right = _flatten(name, a.get(name)), _flatten(name, b.get(name))
        for key in sorted(set(left) | set(right)):
            old, new = left.get(key), right.get(key)
            if old == new:
                continue
            if (
                isinstance(old, list)
                and isinstance(new, list)
                and all(isinstance(v, str | int | float | bool) for v in old + new)
            ):
                removed, added = [v for v in old if v not in new], [v for v in new if v not in old]
                old, new = {"removed": removed}, {"added": added}
            changes[key] = (old, new)
    return changes


def compare_runs(baseline_dir: Path, candidate_dir: Path) -> Comparison:
    base_info, base = _load_run(baseline_dir)
    cand_info, cand = _load_run(candidate_dir)
    paths = []
    for name in sorted(set(base) | set(cand)):
        a, b = base.get(name), cand.get(name)
        outcome_a, outcome_b = (a or {}).get("outcome"), (b or {}).get("outcome")
        item = PathComparison(
            name, outcome_a, outcome_b, categorize(outcome_a, outcome_b), reason=(b or a or {}).get("reason", "")
        )
        if a and b and item.category == SAME_PASS:
            item.changed = _changes(a, b)
        paths.append(item)
    locks = None
    if (baseline_dir / "uv.lock").is_file() and (candidate_dir / "uv.lock").is_file():
        locks = diff(baseline_dir / "uv.lock", candidate_dir / "uv.lock")
    return Comparison(base_info, cand_info, paths, locks)
