"""Two stored runs -> one Comparison: a category per path, the fields that changed, the lock diff, a verdict.
The analyzer never formats (report/ renders it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate.compare.attempts import load_attempts
from gymgate.compare.categories import (
    BROKEN,
    BROKEN_CATEGORY,
    ERROR,
    FLAKY,
    REGRESSED,
    REMOVED_PATH,
    SAME_PASS,
    SKIP,
    SPURIOUS_REGRESSED,
    categorize,
)
from gymgate.compare.lockdiff import LockDiff, diff
from gymgate.errors import EXIT_ERROR, EXIT_FAILED, EXIT_OK, UsageError

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
    # Every attempt's outcome, the first run included: {"baseline": [...], "candidate": [...]}.
    attempts: dict[str, list[str]] = field(default_factory=dict)
    causes: list[str] = field(default_factory=list)  # root-cause keys of the candidate's failure


@dataclass
class Comparison:
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    paths: list[PathComparison]
    locks: LockDiff | None
    baseline_broken: str = ""
    candidate_broken: str = ""

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
        if self.baseline_broken:
            return EXIT_ERROR  # nothing can be judged against a baseline that does not work
        bad = {REGRESSED, BROKEN_CATEGORY}
        return EXIT_FAILED if any(p.category in bad for p in self.paths) else EXIT_OK

    @property
    def verdict(self) -> str:
        groups = self.by_category()
        if self.baseline_broken:
            return f"cannot judge: the baseline is BROKEN ({self.baseline_broken.splitlines()[0][:200]})"
        if self.candidate_broken:
            return f"candidate BROKEN: {self.candidate_broken.splitlines()[0][:200]}"
        # Not regressions, but never silent: the verdict line names them so nobody merges past them unread.
        noted = "".join(f", {len(groups[c])} {c}" for c in (SPURIOUS_REGRESSED, FLAKY, REMOVED_PATH) if groups.get(c))
        if self.exit_code == EXIT_OK:
            same = len(groups.get(SAME_PASS, []))
            return f"no regression ({same} paths pass on both, {len(self.changed)} changed{noted})"
        return f"{len(groups.get(REGRESSED, []))} regressed, {len(groups.get(BROKEN_CATEGORY, []))} broken{noted}"


def _load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict], str]:
    if not (run_dir / "paths").is_dir():
        raise UsageError(f"{run_dir} is not a gymgate run folder (no paths/)")
    mark = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").is_file() else {}
    if mark and not mark.get("complete"):
        raise UsageError(f"{run_dir} is an interrupted run (run.json says incomplete); it cannot be compared")
    source = json.loads((run_dir / "source.json").read_text()) if (run_dir / "source.json").is_file() else {}
    records = {}
    for path in sorted((run_dir / "paths").glob("*.json")):
        record = json.loads(path.read_text())
        records[record["path"]] = record
    return {"dir": str(run_dir), **source}, records, mark.get("broken", "")


def _never_started(records: dict[str, dict], attempts: dict[str, list[str]]) -> str:
    """A ref none of whose environments ever started (every attempt of every judged path a startup ERROR) is
    BROKEN: it says nothing about paths, only that this Gym cannot run here."""
    judged = [r for r in records.values() if r.get("outcome") != SKIP]
    startup = [r for r in judged if r.get("outcome") == ERROR and str(r.get("reason", "")).startswith("startup")]
    if not judged or len(startup) != len(judged):
        return ""
    if any(o != ERROR for r in judged for o in attempts.get(r["path"], [])):
        return ""
    return f"no environment could start: {startup[0]['reason']}"


def _break(records: dict[str, dict]) -> None:
    for record in records.values():
        if record.get("outcome") != SKIP:
            record["outcome"] = BROKEN


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
    base_info, base, base_broken = _load_run(baseline_dir)
    cand_info, cand, cand_broken = _load_run(candidate_dir)
    reruns = load_attempts(candidate_dir, baseline_dir)
    base_broken = base_broken or _never_started(base, reruns["baseline"])
    cand_broken = cand_broken or _never_started(cand, reruns["candidate"])
    for records, broken in ((base, base_broken), (cand, cand_broken)):
        if broken:
            _break(records)
    paths = []
    for name in sorted(set(base) | set(cand)):
        a, b = base.get(name), cand.get(name)
        outcome_a, outcome_b = (a or {}).get("outcome"), (b or {}).get("outcome")
        attempts = {
            role: [first, *reruns[role].get(name, [])]
            for role, first in (("baseline", outcome_a), ("candidate", outcome_b))
            if first is not None
        }
        category = categorize(outcome_a, outcome_b, attempts.get("candidate"), attempts.get("baseline"))
        item = PathComparison(
            name, outcome_a, outcome_b, category, reason=(b or a or {}).get("reason", ""), attempts=attempts
        )
        if outcome_b not in ("PASS", SKIP, None):
            item.causes = root_causes(b or {})
        if a and b and item.category == SAME_PASS:
            item.changed = _changes(a, b)
        paths.append(item)
    locks = None
    if (baseline_dir / "uv.lock").is_file() and (candidate_dir / "uv.lock").is_file():
        locks = diff(baseline_dir / "uv.lock", candidate_dir / "uv.lock")
    return Comparison(base_info, cand_info, paths, locks, base_broken, cand_broken)


def root_causes(record: dict[str, Any]) -> list[str]:
    """What a failing path broke, as keys shared across paths: `[kind] field` per failed check, or the
    error's class (the reason up to its first colon, numbers masked) for ERROR and BROKEN."""
    failures = record.get("failures") or []
    if failures:
        return sorted({f"[{f['kind']}] {_mask(f['field'])}" for f in failures})
    reason = str(record.get("reason") or "").splitlines()[0] if record.get("reason") else ""
    head = reason.split(": ", 2)
    return [_mask(": ".join(head[:2]))[:120]] if reason else [record.get("outcome", "?")]


def _mask(text: str) -> str:
    return re.sub(r"\d+", "N", text)
