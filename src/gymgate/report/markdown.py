"""report.md: verdict first, then the lock diff, the summary table and the per-category detail, with the
"same" buckets collapsed — ready to paste as a PR comment. Renders a Comparison; computes nothing."""

from __future__ import annotations

import json
import re
from typing import Any

from gymgate.compare.categories import ACTIONABLE, SAME_FAIL
from gymgate.compare.runs import Comparison, PathComparison


def _ref(info: dict[str, Any]) -> str:
    return f"{info.get('name', '?')} (nemo-gym {info.get('version', '?')})"


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_markdown(comparison: Comparison) -> str:
    groups = comparison.by_category()
    lines = [
        f"## gymgate: {_ref(comparison.baseline)} → {_ref(comparison.candidate)}",
        "",
        f"**Verdict: {comparison.verdict}.**",
        "",
    ]
    for role, why in (("baseline", comparison.baseline_broken), ("candidate", comparison.candidate_broken)):
        if why:
            lines += [f"### The {role} is BROKEN", "", "```", *why.splitlines()[:30], "```", ""]
    if any(comparison.lifecycle.values()):
        lines += ["### Lifecycle check", ""]
        for role, problems in comparison.lifecycle.items():
            verdict = "FAIL" if role == "candidate" else "noted (baseline)"
            lines += [f"- {role} ({verdict}): did not stop within its bound, killed: {p}" for p in problems]
        lines.append("")
    if comparison.locks is not None:
        locks = comparison.locks
        lines += ["### Lock diff", ""]
        if locks.empty:
            lines.append("No package changes.")
        else:
            for name, (a, b) in sorted(locks.highlighted.items()):
                lines.append(f"- **{name}**: {a or '—'} → {b or '—'}")
            lines.append(
                f"- {len(locks.upgraded)} upgraded, {len(locks.downgraded)} downgraded, {len(locks.replaced)} replaced, "
                f"{len(locks.added)} added "
                f"({', '.join(sorted(locks.added)) or 'none'}), {len(locks.removed)} removed "
                f"({', '.join(sorted(locks.removed)) or 'none'})"
            )
        lines.append("")
    lines += ["### Summary", "", "| category | paths |", "|---|---|"]
    for category in sorted(groups, key=lambda c: (c not in ACTIONABLE, c)):
        lines.append(f"| {category} | {len(groups[category])} |")
    lines.append(f"| changed (pass on both, different fields) | {len(comparison.changed)} |")
    lines.append("")
    lines += _root_causes(comparison.paths)
    for category in [c for c in ACTIONABLE if c in groups]:
        lines += [f"### {category}", ""]
        # Within flaky, what became flaky with this bump comes first.
        for item in sorted(groups[category], key=lambda i: (i.flaky_on != "candidate", i.path)):
            reason = f" — {item.reason.splitlines()[0][:160]}" if item.reason else ""
            blame = f" [{item.blame}]" if item.blame else ""
            flaky = f" (flaky on {_side(item.flaky_on)})" if item.flaky_on else ""
            lines.append(
                f"- `{item.path}`: {item.baseline or '—'} → {item.candidate or '—'}{blame}{flaky}{_attempts(item)}"
                f"{reason}"
            )
        lines.append("")
    if comparison.changed:
        lines += _changed(comparison.changed)
    same = [c for c in groups if c not in ACTIONABLE]
    if same:
        lines += ["<details><summary>unchanged paths</summary>", ""]
        for category in sorted(same):
            lines.append(f"- {category}: " + ", ".join(f"`{p.path}`" for p in groups[category]))
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def _side(flaky_on: str) -> str:
    return {"candidate": "the candidate only", "baseline": "the baseline only", "both": "both refs"}[flaky_on]


def _change(a: Any, b: Any) -> str:
    """One field's change: list members as -removed / +added, anything else as old → new."""
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == {"removed"} and set(b) == {"added"}:
        return " ".join([*(f"−{_short(v, 40)}" for v in a["removed"]), *(f"+{_short(v, 40)}" for v in b["added"])])
    return f"{_short(a)} → {_short(b)}"


def _attempts(item: PathComparison) -> str:
    """The attempts behind a verdict, shown only when there were reruns."""
    if all(len(history) < 2 for history in item.attempts.values()):
        return ""
    return " (" + "; ".join(f"{role}: {', '.join(str(o) for o in h)}" for role, h in item.attempts.items()) + ")"


def _root_causes(paths: list[PathComparison]) -> list[str]:
    """Failing candidate paths grouped by what they broke (crater's root causes): one line per cause."""
    causes: dict[str, list[PathComparison]] = {}
    for item in paths:
        if item.category in ACTIONABLE or item.category == SAME_FAIL:
            for cause in item.causes:
                causes.setdefault(cause, []).append(item)
    if not causes:
        return []
    lines = ["### Root causes", ""]
    for cause, items in sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        listed = ", ".join(f"`{i.path}` ({i.category})" for i in items)
        lines.append(f"- {cause} — {len(items)} path{'s' if len(items) > 1 else ''}: {listed}")
    return [*lines, ""]


def _changed(changed: list[PathComparison]) -> list[str]:
    """PASS→PASS differences, grouped by field across paths (turn indices folded), then each path in full."""
    by_field: dict[str, dict[str, tuple[Any, Any]]] = {}
    for item in changed:
        for name, pair in item.changed.items():
            by_field.setdefault(re.sub(r"\.\d+(?=\.|$)", ".*", name), {})[item.path] = pair
    lines = ["### changed", ""]
    for name, per_path in sorted(by_field.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        pairs = {json.dumps(pair, default=str, sort_keys=True) for pair in per_path.values()}
        count = f"{len(per_path)} path{'s' if len(per_path) > 1 else ''}"
        if len(pairs) == 1:
            a, b = next(iter(per_path.values()))
            lines.append(f"- {name}: {_change(a, b)} — {count}")
        else:
            lines.append(f"- {name}: differs per path — {count}")
    lines += ["", "<details><summary>every changed field, path by path</summary>", ""]
    for item in changed:
        lines.append(f"- `{item.path}`")
        for name, (a, b) in item.changed.items():
            lines.append(f"  - {name}: {_change(a, b)}")
    return [*lines, "", "</details>", ""]
