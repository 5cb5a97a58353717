"""report.md: verdict first, then the lock diff, the summary table and the per-category detail, with the
"same" buckets collapsed — ready to paste as a PR comment. Renders a Comparison; computes nothing."""

from __future__ import annotations

import json
from typing import Any

from gymgate import coverage
from gymgate.compare import acks as ack_files
from gymgate.compare.observation import side_by_side, text_diff
from gymgate.compare.runs import NONDETERMINISTIC_CAUSE, Comparison, PathComparison
from gymgate.refs.source import nemo_gym_label
from gymgate.report.fidelity import fidelity_columns
from gymgate.report.grouping import (
    ACKNOWLEDGED,
    ADDITIVE,
    FAILING,
    ChangeBundle,
    bundle_changes,
    cause_lines,
    describe_paths,
)
from gymgate.report.next_steps import ack_command
from gymgate.report.variants import KNOWN, disagreements, variant_table
from gymgate.rl.profile import TRAINED_MARKERS, Profile
from gymgate.runfolder import PathRecord
from gymgate.verdict import ACTIONABLE, CATEGORIES, CHANGED, FIXED, FLAKY, NEW_PATH, REMOVED_PATH, SAME_FAIL, downgrade


def ref_label(info: dict[str, Any]) -> str:
    return f"{info.get('name', '?')} (nemo-gym {nemo_gym_label(info) or info.get('version', '?')})"


def render_markdown(comparison: Comparison) -> str:
    """report.md: every section."""
    sections = (_header, _broken, _lifecycle, _locks, _summary, _root_causes, _categories, _contract_changes)
    sections += (_acknowledged, _additive, _ack_notes, _trained_markers, _fidelity, _variants, _exercised, _unchanged)
    return "\n".join(line for section in sections for line in section(comparison))


def terminal_sections(comparison: Comparison) -> list[list[str]]:
    """What the terminal shows of a comparison, section by section, most important first (report/terminal.py lays
    them out on one screen): the verdict, the lifecycle check, the lock diff, the categories counted, root causes
    and changes grouped (report/grouping.py), the replays and forms in a line each."""
    return [
        _header(comparison),
        _lifecycle(comparison),
        _terminal_locks(comparison),
        _terminal_summary(comparison),
        _terminal_causes(comparison),
        _terminal_others(comparison),
        _terminal_changes(comparison),
        [*_terminal_fidelity(comparison), *_terminal_variants(comparison)],
    ]


def _terminal_summary(comparison: Comparison) -> list[str]:
    """The categories counted in one line, those a reader looks at first."""
    groups = comparison.by_category()
    counted = sorted(groups, key=lambda c: (c not in ACTIONABLE, CATEGORIES.index(c)))
    return ["Paths: " + " · ".join(f"{len(groups[c])} {c}" for c in counted), ""] if counted else []


def _terminal_locks(comparison: Comparison) -> list[str]:
    """The lock diff in one line: the highlighted packages, then the counts."""
    items = _lock_items(comparison)
    return ["Lock diff: " + "; ".join(items), ""] if items else []


def _cause_lines(comparison: Comparison, example: bool) -> list[str]:
    """Root causes on the same paths as one line each (report/grouping.py); under a nondeterministic one the two
    attempts' values side by side, and with `example` what the first path's failure said."""
    universe = [p.path for p in comparison.paths]
    lines = []
    for group in cause_lines(cause_groups(comparison.paths)):
        lines.append(f"- {group.text(universe)}")
        first = group.paths[0]
        if any(c.startswith(NONDETERMINISTIC_CAUSE) for c in group.causes):
            lines.append(f"  - `{first.path}`: {first.disagreements['candidate'].line('candidate')}")
        elif example and first.category != CHANGED and first.reason:
            said = first.reason.splitlines()[0]
            if not any(said[:60] in cause for cause in group.causes):
                blame = f" [{first.blame}]" if first.blame else ""
                lines.append(f"  - e.g. `{first.path}`{blame}: {said[:200]}")
    return lines


def _terminal_causes(comparison: Comparison) -> list[str]:
    lines = _cause_lines(comparison, example=True)
    return ["### Root causes", "", *lines, ""] if lines else []


def _terminal_others(comparison: Comparison) -> list[str]:
    """The categories a reader looks at that have no root cause of their own (fixed, new, removed, flaky paths):
    one line each, the paths by their shape."""
    groups = comparison.by_category()
    universe = [p.path for p in comparison.paths]
    lines = [
        f"- {category}: {describe_paths([p.path for p in groups[category]], universe)}"
        for category in (FLAKY, FIXED, NEW_PATH, REMOVED_PATH)
        if groups.get(category)
    ]
    return ["### Other paths to look at", "", *lines, ""] if lines else []


def _terminal_changes(comparison: Comparison) -> list[str]:
    """Contract changes as grouped lines: unacknowledged ones (they fail), then one line per review that covered
    some; additive ones counted."""
    bundles = _bundles(comparison)
    lines: list[str] = []
    failing = [b for b in bundles if b.status == FAILING]
    if failing:
        lines += [
            f"### Contract changes (unacknowledged: they fail the gate until reviewed — `{ack_command(comparison)}`)",
            "",
        ]
        lines += [f"- {bundle_line(comparison, b)}" for b in failing]
        lines.append("")
    acked = [b for b in bundles if b.status == ACKNOWLEDGED]
    if acked:
        fields = sum(len(b.fields) for b in acked)
        paths = sorted({p for b in acked for p in b.paths})
        files = sorted({f for b in acked for f in ack_files.files_of(b.ack_file)})
        lines.append(f"Acknowledged: {fields} contract change(s) on {len(paths)} path(s), by {', '.join(files)}.")
    additive = [b for b in bundles if b.status == ADDITIVE]
    if additive:
        lines.append(
            f"Additive (new keys in Gym's result; they pass): {sum(len(b.fields) for b in additive)} field(s)."
        )
    if comparison.acks.refused or comparison.acks.stale:
        lines.append(f"Acknowledgements: {len(comparison.acks.refused)} refused, {len(comparison.acks.stale)} stale.")
    if comparison.acks.overridden:
        lines.append(f"Your reviews replaced {len(comparison.acks.overridden)} of gymgate's (report.md lists them).")
    return lines


def _bundles(comparison: Comparison) -> list[ChangeBundle]:
    return bundle_changes(comparison.change_groups(), comparison.profile)


def bundle_line(comparison: Comparison, bundle: ChangeBundle) -> str:
    old, new = comparison.baseline.get("name", "baseline"), comparison.candidate.get("name", "candidate")
    is_downgrade = downgrade(comparison.baseline, comparison.candidate)
    return bundle.line(old, new, is_downgrade, [p.path for p in comparison.paths])


def _header(comparison: Comparison) -> list[str]:
    judged = comparison.gym_tests
    return [
        f"## gymgate: {ref_label(comparison.baseline)} → {ref_label(comparison.candidate)}",
        "",
        f"**Verdict: {comparison.verdict}.**",
        "",
        rl_line(comparison.profile, comparison.recipe),
        "",
        *([f"**{judged['verdict']}** ([every test]({judged['page']}))", ""] if judged else []),
    ]


def rl_line(profile: Profile, recipe: str = "") -> str:
    """Which RL a verdict speaks for, in one line (every report's header)."""
    with_recipe = f", with the `{recipe}` recipe's reward penalties (`--rl-recipe`)" if recipe else ""
    return f"Judged as {profile.describes} (RL profile `{profile.name}`, `--rl-profile`){with_recipe}."


def _trained_markers(comparison: Comparison) -> list[str]:
    """Verdicts Gym marks as degraded (failure_kind / failure_reason) that the profile's RL trains on all the same:
    not failed (the RL would not drop them), but a reviewer should know a verdict said so."""
    marked = [
        (path, record.rl[TRAINED_MARKERS])
        for path, record in sorted(comparison.candidate_records.items())
        if TRAINED_MARKERS in record.rl
    ]
    if not marked:
        return []
    lines = [
        "### Verdicts Gym marks as degraded, which RL trains on",
        "",
        f"{len(marked)} path(s) of the candidate carry a diagnostic failure marker on a verdict that is not masked: "
        f"RL (`{comparison.profile.name}`) reads no such marker and trains on the reward, so they are not failed. "
        "A marker that appeared with a bump is also a change below.",
        "",
    ]
    lines += [f"- `{path}`: " + ", ".join(f"`{k}` = {v!r}" for k, v in found.items()) for path, found in marked[:40]]
    return [*lines, *([f"- … and {len(marked) - 40} more"] if len(marked) > 40 else []), ""]


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


def _lock_items(comparison: Comparison) -> list[str]:
    """The lock diff's items: each highlighted package, then the counts (report.md lists them, the terminal joins
    them into one line)."""
    locks = comparison.locks
    if locks is None:
        return []
    if locks.empty:
        return ["No package changes."]
    items = [f"**{name}**: {a or '—'} → {b or '—'}" for name, (a, b) in sorted(locks.highlighted.items())]
    items.append(
        f"{len(locks.upgraded)} upgraded, {len(locks.downgraded)} downgraded, {len(locks.replaced)} replaced, "
        f"{len(locks.added)} added "
        f"({', '.join(sorted(locks.added)) or 'none'}), {len(locks.removed)} removed "
        f"({', '.join(sorted(locks.removed)) or 'none'})"
    )
    return items


def _locks(comparison: Comparison) -> list[str]:
    items = _lock_items(comparison)
    if not items:
        return []
    if comparison.locks is not None and comparison.locks.empty:
        return ["### Lock diff", "", *items, ""]
    return ["### Lock diff", "", *(f"- {item}" for item in items), ""]


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


def _fidelity_of(comparison: Comparison):
    return fidelity_columns(sides(comparison))


def _fidelity(comparison: Comparison) -> list[str]:
    """Per environment, how many recorded rollouts reproduced on each ref, and why the others did not."""
    labels, rows, _ = _fidelity_of(comparison)
    if not rows:
        return []
    lines = [
        "### Recorded rollouts replayed (fidelity)",
        "",
        f"| environment | {' | '.join(labels)} |",
        "|---|---|---|",
    ]
    lines += [f"| {env} | {' | '.join(_escaped(c) for c in cells)} |" for env, cells in rows]
    return [*lines, ""]


def _escaped(text: str) -> str:
    return text.replace("|", "\\|")


def _terminal_fidelity(comparison: Comparison) -> list[str]:
    _, _, totals = _fidelity_of(comparison)
    parts = [f"{reproduce}/{replays} reproduce on {label}" for label, reproduce, replays in totals]
    return [f"recorded rollouts replayed: {'; '.join(parts)} (per environment: report.md)"] if parts else []


def sides(comparison: Comparison) -> list[tuple[str, list[PathRecord]]]:
    """Each ref's label and records, baseline first: what the per-ref tables (fidelity, variants) read."""
    return [
        (ref_label(comparison.baseline), list(comparison.baseline_records.values())),
        (ref_label(comparison.candidate), list(comparison.candidate_records.values())),
    ]


def _variants(comparison: Comparison) -> list[str]:
    """Variants that disagree with their original on either ref (the category above says what the bump did), and
    the candidate's disagreements with both answers and verdicts side by side."""
    table = variant_table(sides(comparison), {p.path: p.category for p in comparison.paths})
    if not table.rows:
        return []
    lines = ["### Forms the verifier gets wrong (variants that disagree with their original)", ""]
    lines += [f"| variant | {' | '.join(table.labels)} | category |", "|---|" + "---|" * (len(table.labels) + 1)]
    lines += [f"| `{path}` | {' | '.join(cells)} | {category} |" for path, cells, category in table.rows]
    lines.append("")
    for item in table.details:
        lines += [
            f"<details><summary><code>{item.path}</code>: {item.why}</summary>",
            "",
            "| | original | variant |",
            "|---|---|---|",
            f"| answer | {_cell(item.answers.get('original', ''))} | {_cell(item.answers.get('variant', ''))} |",
            f"| verdict | {_cell(json.dumps(item.original))} | {_cell(json.dumps(item.variant))} |",
            *([f"\n{KNOWN}: {item.known}"] if item.known else []),
            "",
            "</details>",
            "",
        ]
    return lines


def _exercised(comparison: Comparison) -> list[str]:
    """What the candidate's paths exercised per environment, by family of forms and by the call a fault failed
    (gymgate.coverage): a 0 is a family this run did not judge there (`gymgate cases list` says why)."""
    records = list(comparison.candidate_records.values())
    envs = sorted({r.env for r in records})
    if not envs:
        return []
    families = coverage.family_names()
    lines = [
        "### What the paths exercised (the candidate's, by family: `gymgate cases list` says why a family has none)",
        "",
        f"| environment | {' | '.join(families)} |",
        "|---|" + "---|" * len(families),
    ]
    for env in envs:
        counts = coverage.count(env, (r.path for r in records if r.env == env)).counts
        lines.append(f"| {env} | {' | '.join(str(counts[f]) if counts[f] else '·' for f in families)} |")
    return [*lines, ""]


def _terminal_variants(comparison: Comparison) -> list[str]:
    counts = []
    for label, records in sides(comparison):
        found = disagreements(records).values()
        if found:
            known = sum(1 for d in found if d.known)
            counts.append(f"{len(found)} on {label}" + (f" ({known} known)" if known else ""))
    return [f"forms the verifier gets wrong: {'; '.join(counts)} (report.md)"] if counts else []


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
    """Root causes on the same paths as one line each (report/grouping.py), every path named below them."""
    causes = cause_groups(comparison.paths)
    if not causes:
        return []
    lines = ["### Root causes", "", *_cause_lines(comparison, example=False)]
    lines += ["", "<details><summary>each root cause with its paths</summary>", ""]
    for cause, items in causes:
        listed = ", ".join(f"`{i.path}` ({i.category})" for i in items)
        lines.append(f"- {cause} — {len(items)} path{'s' if len(items) > 1 else ''}: {listed}")
    return [*lines, "", "</details>", ""]


def _contract_changes(comparison: Comparison) -> list[str]:
    """Unacknowledged contract changes on paths passing on both refs: one heading per bundle of changes that move
    together, each field's values side by side under it. They fail the gate."""
    failing = [b for b in _bundles(comparison) if b.status == FAILING]
    if not failing:
        return []
    old, new = comparison.baseline.get("name", "baseline"), comparison.candidate.get("name", "candidate")
    lines = [
        f"### Contract changes (unacknowledged: they fail the gate until reviewed — `{ack_command(comparison)}`)",
        "",
        "What the model receives or what RL trains on differs, on paths that pass on both refs.",
        "",
    ]
    universe = [p.path for p in comparison.paths]
    for bundle in failing:
        lines += [f"#### {bundle_line(comparison, bundle)}", "", f"| field | paths | {old} (before) | {new} (after) |"]
        lines.append("|---|---|---|---|")
        diffs: list[str] = []
        for group in bundle.groups:
            before, after = side_by_side(group.sample.before, group.sample.after)
            on = bundle.paths_of(group, universe) or "all of them"
            lines.append(f"| `{group.field}` | {on} | {_cell(before)} | {_cell(after)} |")
            diff = text_diff(group.sample.before, group.sample.after)
            if diff:
                diffs += [f"`{group.field}` ({on}):", "", "```diff", *diff, "```", ""]
        lines += ["", *diffs]
    return lines


def _acknowledged(comparison: Comparison) -> list[str]:
    """Contract changes a reviewed acknowledgement covers, bundled, each with its reason."""
    acked = [b for b in _bundles(comparison) if b.status == ACKNOWLEDGED]
    if not acked:
        return []
    lines = ["### Acknowledged changes", ""]
    for bundle in acked:
        fields = ", ".join(f"`{f}`" for f in bundle.fields)
        lines.append(f"- {bundle_line(comparison, bundle)}: **{bundle.ack}** ({bundle.ack_file}) — {fields}")
    return [*lines, ""]


def _additive(comparison: Comparison) -> list[str]:
    additive = [b for b in _bundles(comparison) if b.status == ADDITIVE]
    if not additive:
        return []
    lines = ["<details><summary>additive changes (new keys in Gym's result; they pass)</summary>", ""]
    for bundle in additive:
        lines.append(f"- {bundle_line(comparison, bundle)}")
        for group in bundle.groups:
            _, after = side_by_side(group.sample.before, group.sample.after, limit=80)
            lines.append(f"  - `{group.field}` = `{after}`")
    return [*lines, "", "</details>", ""]


def _ack_notes(comparison: Comparison) -> list[str]:
    """What the acknowledgement files did wrong: an entry without a reason, one matching no change."""
    report = comparison.acks
    if not (report.stale or report.refused or report.overridden):
        return []
    lines = ["### Acknowledgements", ""]
    lines += [f"- refused (no reason; it covers nothing until one is written): {a.where}" for a in report.refused]
    lines += [f"- stale (matches no change of this comparison): {a.where}" for a in report.stale]
    lines += [f"- gymgate's review {line} (your repository's, which wins)" for line in report.overridden]
    return [*lines, ""]


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|").replace("\n", "⏎").replace("`", "'") + "`"
