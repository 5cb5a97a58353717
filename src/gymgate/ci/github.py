"""Results where GitHub Actions shows them: the comparison's Markdown in the job summary, one annotation per path a
reviewer must look at, and long phases folded into log groups. Outside Actions (GITHUB_ACTIONS unset) nothing here
prints or writes anything; the step summary is written whenever GITHUB_STEP_SUMMARY names a file.

Workflow commands: https://docs.github.com/actions/reference/workflow-commands-for-github-actions
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gymgate.outcomes import PASS, SKIP
from gymgate.verdict import BROKEN_CATEGORY, CHANGED, FLAKY, REGRESSED, UNJUDGED

if TYPE_CHECKING:
    from gymgate.compare.runs import Comparison, PathComparison
    from gymgate.runfolder import PathRecord

ACTIONS_VAR = "GITHUB_ACTIONS"
SUMMARY_VAR = "GITHUB_STEP_SUMMARY"
# A path in one of these categories is an ::error (it fails the gate, or could not be judged and fails closed);
# flaky ones are ::warning (never a pass, but not this bump's regression either).
ERROR_CATEGORIES = (REGRESSED, BROKEN_CATEGORY, CHANGED, UNJUDGED)
WARNING_CATEGORIES = (FLAKY,)
MAX_MESSAGE = 1000  # an annotation shows a few lines; the report holds the rest


def in_actions() -> bool:
    return os.environ.get(ACTIONS_VAR) == "true"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str) -> str:
    """One workflow command line, escaped (a message's newlines and colons cannot end or split it)."""
    props = ",".join(f"{key}={_property(value)}" for key, value in properties.items())
    return f"::{name}{' ' + props if props else ''}::{_data(message)}"


_depth = 0  # groups open in this process: the Actions log cannot nest them, so an inner one folds into the outer


def folding() -> bool:
    """Whether a new group would show: under Actions, and not inside another."""
    return in_actions() and _depth == 0


@contextmanager
def group(title: str, out: TextIO | None = None) -> Iterator[None]:
    """Fold what is printed inside into one collapsible block of the Actions log (a no-op elsewhere, and inside
    another group)."""
    global _depth
    stream = out or sys.stdout
    shown = folding()
    if shown:
        print(command("group", title), file=stream, flush=True)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if shown:
            print("::endgroup::", file=stream, flush=True)


def path_annotation(item: PathComparison) -> str | None:
    """The annotation of one compared path, or None when it needs no reader."""
    if item.category in ERROR_CATEGORIES:
        level = "error"
    elif item.category in WARNING_CATEGORIES:
        level = "warning"
    else:
        return None
    title = f"gymgate: {item.path} {item.category}"
    why = item.reason.splitlines()[0] if item.reason else ""
    parts = [f"{item.path}: {item.category} ({item.baseline or '—'} → {item.candidate or '—'})"]
    if item.flaky_on:
        parts.append(f"flaky on {item.flaky_on}")
    if item.blame:
        parts.append(f"blame: {item.blame}")
    if item.causes:
        parts.append("causes: " + "; ".join(item.causes[:5]))
    if why:
        parts.append(why)
    return command(level, "\n".join(parts)[:MAX_MESSAGE], title=title)


def comparison_annotations(comparison: Comparison) -> list[str]:
    lines = [a for a in (path_annotation(p) for p in comparison.paths) if a]
    for problem in comparison.lifecycle.get("candidate", []):
        lines.append(
            command("error", f"did not stop within its bound and was killed: {problem}", title="gymgate: lifecycle")
        )
    if comparison.baseline_broken:
        lines.append(command("error", comparison.baseline_broken[:MAX_MESSAGE], title="gymgate: baseline BROKEN"))
    return lines


def run_annotations(records: list[PathRecord]) -> list[str]:
    """A run judged alone (no baseline): every path that did not pass or skip."""
    lines = []
    for record in records:
        if record.outcome in (PASS, SKIP):
            continue
        why = record.reason.splitlines()[0] if record.reason else record.outcome
        blame = f" [{record.blame}]" if record.blame else ""
        message = f"{record.path}: {record.outcome}{blame} {why}"[:MAX_MESSAGE]
        lines.append(command("error", message, title=f"gymgate: {record.path} {record.outcome}"))
    return lines


def append_summary(markdown: str) -> Path | None:
    """Append to the job summary when GITHUB_STEP_SUMMARY names a file (returns it), else nothing."""
    target = os.environ.get(SUMMARY_VAR)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown.rstrip("\n") + "\n\n")
    return path


def publish(markdown: str, annotations: list[str], out: TextIO | None = None) -> None:
    """The job summary (when asked for) and, under Actions, the annotations."""
    append_summary(markdown)
    if in_actions():
        stream = out or sys.stdout
        for line in annotations:
            print(line, file=stream)
        stream.flush()
