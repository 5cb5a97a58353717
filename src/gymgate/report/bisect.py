"""The bisect report: the first bad commit (SHA, subject, author date, the files it touched under the affected
environments), the last good one, every step with its outcome, and where the last-good → first-bad comparison is."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from gymgate.atomic import write_json_atomic, write_text_atomic
from gymgate.refs.source import nemo_gym_label
from gymgate.results import BisectResult


def verdict_line(result: BisectResult) -> str:
    if not result.paths:
        return f"nothing regresses from {result.good.name} to {result.bad.name}: nothing to bisect"
    if result.first_bad is None:
        return (
            f"the first bad commit is one of {len(result.suspects)} (commits between could not be judged): "
            + ", ".join(c[:12] for c in result.suspects)
        )
    return f"first bad commit: {result.first_bad[:12]} (last good: {result.last_good[:12]})"


def render_bisect_markdown(
    result: BisectResult, info: dict[str, dict[str, str]], touched: list[str], report: Path | None
) -> str:
    good, bad = (nemo_gym_label(s.to_json()) or s.name for s in (result.good, result.bad))
    lines = [f"## gymgate bisect: {good} → {bad}", "", f"**{verdict_line(result)}**", ""]
    lines += [
        f"Paths bisected: {', '.join(f'`{p}`' for p in result.paths) or 'none'}; "
        f"{len(result.commits)} first-parent commit(s) after the good ref, {len(result.steps)} step(s).",
        "",
    ]
    if result.first_bad:
        first = info.get(result.first_bad, {})
        lines += [
            "### First bad commit",
            "",
            f"- `{result.first_bad}` {first.get('subject', '')}",
            f"- author date: {first.get('date', '?')}",
            "- files it touched under the affected environments: "
            + (", ".join(f"`{f}`" for f in touched) if touched else "none (the cause is outside them)"),
            "",
        ]
        last = info.get(result.last_good, {})
        lines += ["### Last good commit", "", f"- `{result.last_good}` {last.get('subject', '')}", ""]
    if result.steps:
        lines += ["### Steps", "", "| # | commit | subject | outcome | why |", "|---|---|---|---|---|"]
        for n, step in enumerate(result.steps, 1):
            why = step.why.replace("|", "\\|").replace("\n", " ")[:200]
            lines.append(f"| {n} | `{step.commit[:12]}` | {step.subject[:60]} | {step.verdict} | {why} |")
        lines.append("")
    lines += ["### Runs", ""] + [f"- `{commit[:12]}`: `{run}`" for commit, run in result.runs.items()] + [""]
    if report is not None:
        lines += [f"The comparison of the last good and the first bad commit: `{report}`", ""]
    return "\n".join(lines) + "\n"


def write_bisect_reports(
    result: BisectResult, info: dict[str, dict[str, str]], touched: list[str], report: Path | None, directory: Path
) -> list[Path]:
    text = render_bisect_markdown(result, info, touched, report)
    data = {
        "verdict": verdict_line(result),
        "good": result.good.to_json(),
        "bad": result.bad.to_json(),
        "paths": result.paths,
        "first_bad": result.first_bad
        and {"commit": result.first_bad, **info.get(result.first_bad, {}), "touched": touched},
        "last_good": {"commit": result.last_good, **info.get(result.last_good, {})},
        "suspects": result.suspects,
        "steps": [{**asdict(s), "runs": [str(r) for r in s.runs]} for s in result.steps],
        "comparison": str(report) if report else None,
    }
    return [
        write_text_atomic(directory / "bisect.md", text),
        write_json_atomic(directory / "bisect.json", json.loads(json.dumps(data, default=str))),
    ]
