"""report.md: verdict first, then the lock diff, the summary table and the per-category detail, with the
"same" buckets collapsed — ready to paste as a PR comment. Renders a Comparison; computes nothing."""

from __future__ import annotations

import json
from typing import Any

from gymgate.compare.categories import ACTIONABLE
from gymgate.compare.runs import Comparison


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
    if comparison.locks is not None:
        locks = comparison.locks
        lines += ["### Lock diff", ""]
        if locks.empty:
            lines.append("No package changes.")
        else:
            for name, (a, b) in sorted(locks.highlighted.items()):
                lines.append(f"- **{name}**: {a or '—'} → {b or '—'}")
            lines.append(
                f"- {len(locks.upgraded)} upgraded, {len(locks.downgraded)} downgraded, {len(locks.added)} added "
                f"({', '.join(sorted(locks.added)) or 'none'}), {len(locks.removed)} removed "
                f"({', '.join(sorted(locks.removed)) or 'none'})"
            )
        lines.append("")
    lines += ["### Summary", "", "| category | paths |", "|---|---|"]
    for category in sorted(groups, key=lambda c: (c not in ACTIONABLE, c)):
        lines.append(f"| {category} | {len(groups[category])} |")
    lines.append(f"| changed (pass on both, different fields) | {len(comparison.changed)} |")
    lines.append("")
    for category in [c for c in ACTIONABLE if c in groups]:
        lines += [f"### {category}", ""]
        for item in groups[category]:
            reason = f" — {item.reason.splitlines()[0][:160]}" if item.reason else ""
            lines.append(f"- `{item.path}`: {item.baseline or '—'} → {item.candidate or '—'}{reason}")
        lines.append("")
    if comparison.changed:
        lines += ["### changed", ""]
        for item in comparison.changed:
            lines.append(f"- `{item.path}`")
            for name, (a, b) in item.changed.items():
                lines.append(f"  - {name}: {_short(a)} → {_short(b)}")
        lines.append("")
    same = [c for c in groups if c not in ACTIONABLE]
    if same:
        lines += ["<details><summary>unchanged paths</summary>", ""]
        for category in sorted(same):
            lines.append(f"- {category}: " + ", ".join(f"`{p.path}`" for p in groups[category]))
        lines += ["", "</details>", ""]
    return "\n".join(lines)
