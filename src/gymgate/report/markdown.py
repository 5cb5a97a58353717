"""report.md: verdict first, then the lock diff, the summary table and the per-category detail, with the
"same" buckets collapsed — ready to paste as a PR comment. Renders a Comparison; computes nothing."""

from __future__ import annotations

from typing import Any

from gymgate.compare.observation import CONTRACT, side_by_side, text_diff
from gymgate.compare.runs import NONDETERMINISTIC_CAUSE, Comparison, PathComparison
from gymgate.refs.source import nemo_gym_label
from gymgate.verdict import ACTIONABLE, SAME_FAIL


def ref_label(info: dict[str, Any]) -> str:
    return f"{info.get('name', '?')} (nemo-gym {nemo_gym_label(info) or info.get('version', '?')})"


def render_markdown(comparison: Comparison) -> str:
    """report.md: every section."""
    sections = (_header, _broken, _lifecycle, _locks, _summary, _root_causes, _categories, _contract_changes)
    sections += (_acknowledged, _additive, _ack_notes, _unchanged)
    return "\n".join(line for section in sections for line in section(comparison))


def render_terminal(comparison: Comparison) -> str:
    """What the terminal shows of a comparison: the verdict, the lifecycle check, the summary table, the root causes
    (with who is to blame) and what a reviewer must act on; report.md has everything."""
    acks = _acknowledged(comparison) or _ack_notes(comparison)
    sections = [_header, _lifecycle, _summary, _root_causes, _contract_changes]
    return "\n".join(text for text in (*("\n".join(s(comparison)) for s in sections), "\n".join(acks)) if text)


def _header(comparison: Comparison) -> list[str]:
    return [
        f"## gymgate: {ref_label(comparison.baseline)} → {ref_label(comparison.candidate)}",
        "",
        f"**Verdict: {comparison.verdict}.**",
        "",
    ]


def _broken(comparison: Comparison) -> list[str]:
    lines: list[str] = []
    for role, why in (("baseline", comparison.baseline_broken), ("candidate", comparison.candidate_broken)):
        if why:
            lines += [f"### The {role} is BROKEN", "", "```", *why.splitlines()[:30], "```", ""]
    return lines


def _lifecycle(comparison: Comparison) -> list[str]:
    if not any(comparison.lifecycle.values()):
        return []
    lines = ["### Lifecycle check", ""]
    for role, problems in comparison.lifecycle.items():
        verdict = "FAIL" if role == "candidate" else "noted (baseline)"
        lines += [f"- {role} ({verdict}): did not stop within its bound, killed: {p}" for p in problems]
    return [*lines, ""]


def _locks(comparison: Comparison) -> list[str]:
    locks = comparison.locks
    if locks is None:
        return []
    lines = ["### Lock diff", ""]
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
    return [*lines, ""]


def _summary(comparison: Comparison) -> list[str]:
    groups = comparison.by_category()
    lines = ["### Summary", "", "| category | paths |", "|---|---|"]
    for category in sorted(groups, key=lambda c: (c not in ACTIONABLE, c)):
        lines.append(f"| {category} | {len(groups[category])} |")
    lines.append(f"| pass on both with changes (contract or additive, any acknowledged) | {len(comparison.changed)} |")
    return [*lines, ""]


def _categories(comparison: Comparison) -> list[str]:
    groups = comparison.by_category()
    lines: list[str] = []
    for category in [c for c in ACTIONABLE if c in groups]:
        lines += [f"### {category}", ""]
        # Within regressed, what the bump made nondeterministic comes first.
        for item in sorted(groups[category], key=lambda i: (not i.nondeterministic_on_candidate, i.path)):
            limit = 320 if item.disagreements else 160  # both attempts' values side by side
            reason = f" — {item.reason.splitlines()[0][:limit]}" if item.reason else ""
            blame = f" [{item.blame}]" if item.blame else ""
            flaky = f" (flaky on {flaky_side_text(item.flaky_on)})" if item.flaky_on else ""
            lines.append(
                f"- `{item.path}`: {item.baseline or '—'} → {item.candidate or '—'}{blame}{flaky}{_attempts(item)}"
                f"{reason}"
            )
        lines.append("")
    return lines


def _unchanged(comparison: Comparison) -> list[str]:
    groups = comparison.by_category()
    same = [c for c in groups if c not in ACTIONABLE]
    if not same:
        return []
    lines = ["<details><summary>unchanged paths</summary>", ""]
    for category in sorted(same):
        lines.append(f"- {category}: " + ", ".join(f"`{p.path}`" for p in groups[category]))
    return [*lines, "", "</details>", ""]


def flaky_side_text(flaky_on: str) -> str:
    return {"baseline": "the baseline only", "both": "both refs"}[flaky_on]


def _attempts(item: PathComparison) -> str:
    """The attempts behind a verdict, each side's outcomes in the order they ran."""
    if all(len(history) < 2 for history in item.attempts.values()):
        return ""
    return " (" + "; ".join(f"{role}: {', '.join(str(o) for o in h)}" for role, h in item.attempts.items()) + ")"


def cause_groups(paths: list[PathComparison]) -> list[tuple[str, list[PathComparison]]]:
    """Failing candidate paths grouped by what they broke (crater's root causes), the most widespread first."""
    causes: dict[str, list[PathComparison]] = {}
    for item in paths:
        if item.category in ACTIONABLE or item.category == SAME_FAIL:
            for cause in item.causes:
                causes.setdefault(cause, []).append(item)
    return sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def _root_causes(comparison: Comparison) -> list[str]:
    """One line per root cause."""
    causes = cause_groups(comparison.paths)
    if not causes:
        return []
    lines = ["### Root causes", ""]
    for cause, items in causes:
        listed = ", ".join(f"`{i.path}` ({i.category})" for i in items)
        lines.append(f"- {cause} — {len(items)} path{'s' if len(items) > 1 else ''}: {listed}")
        if cause.startswith(NONDETERMINISTIC_CAUSE):  # the two attempts' values, side by side, wherever this shows
            first = items[0]
            lines.append(f"  - `{first.path}`: {first.disagreements['candidate'].line('candidate')}")
    return [*lines, ""]


def _contract_changes(comparison: Comparison) -> list[str]:
    """Unacknowledged contract changes on paths passing on both refs, side by side: they fail the gate."""
    failing = [g for g in comparison.change_groups() if g.failing]
    if not failing:
        return []
    old, new = comparison.baseline.get("name", "baseline"), comparison.candidate.get("name", "candidate")
    lines = [
        "### Contract changes (unacknowledged: they fail the gate until reviewed — `gymgate ack`)",
        "",
        "What the model receives or what RL trains on differs, on paths that pass on both refs.",
        "",
    ]
    for group in failing:
        before, after = side_by_side(group.sample.before, group.sample.after)
        lines += [
            f"#### `{group.field}` — {_paths(group.paths)}",
            "",
            f"| {old} (before) | {new} (after) |",
            "|---|---|",
            f"| {_cell(before)} | {_cell(after)} |",
            "",
        ]
        diff = text_diff(group.sample.before, group.sample.after)
        if diff:
            lines += ["```diff", *diff, "```", ""]
    return lines


def _acknowledged(comparison: Comparison) -> list[str]:
    """Contract changes a reviewed acknowledgement covers, with its reason."""
    acked = [g for g in comparison.change_groups() if g.kind == CONTRACT and g.ack]
    if not acked:
        return []
    lines = ["### Acknowledged changes", ""]
    lines += [f"- `{g.field}` — {_paths(g.paths)}: **{g.ack}** ({g.ack_file})" for g in acked]
    return [*lines, ""]


def _additive(comparison: Comparison) -> list[str]:
    additive = [g for g in comparison.change_groups() if g.kind != CONTRACT]
    if not additive:
        return []
    lines = ["<details><summary>additive changes (new keys in Gym's result; they pass)</summary>", ""]
    for group in additive:
        _, after = side_by_side(group.sample.before, group.sample.after, limit=80)
        lines.append(f"- `{group.field}` = `{after}` — {_paths(group.paths)}")
    return [*lines, "", "</details>", ""]


def _ack_notes(comparison: Comparison) -> list[str]:
    """What the acknowledgement files did wrong: an entry without a reason, one matching no change."""
    report = comparison.acks
    if not (report.stale or report.refused):
        return []
    lines = ["### Acknowledgements", ""]
    lines += [f"- refused (no reason; it covers nothing until one is written): {a.where}" for a in report.refused]
    lines += [f"- stale (matches no change of this comparison): {a.where}" for a in report.stale]
    return [*lines, ""]


def _paths(paths: list[str]) -> str:
    return f"{len(paths)} path{'s' if len(paths) > 1 else ''}: " + ", ".join(f"`{p}`" for p in sorted(paths))


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|").replace("\n", "⏎").replace("`", "'") + "`"
