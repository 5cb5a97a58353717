"""Results where GitHub Actions shows them: the comparison's Markdown in the job summary, one annotation per root
cause a reviewer must look at (within GitHub's 10 per level, anchored to the uv.lock line that pins Gym), and long
phases folded into log groups. Outside Actions (GITHUB_ACTIONS unset) nothing here
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


# GitHub shows at most 10 error and 10 warning annotations of a step; one more would be dropped without a word. So
# paths are annotated by root cause, and a level with more causes than that ends in one that counts the rest.
MAX_PER_LEVEL = 10
WORKSPACE_VAR = "GITHUB_WORKSPACE"
GYM_PACKAGE_LINE = 'name = "nemo-gym"'


def lock_anchor() -> dict[str, str]:
    """Where an annotation points in the repository being judged: the line of its uv.lock that pins Gym (the bump's
    own change), when there is one."""
    workspace = os.environ.get(WORKSPACE_VAR)
    if not workspace:  # not a checkout Actions made: nothing to point into
        return {}
    lock = Path(workspace) / "uv.lock"
    try:
        lines = lock.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    found = next((n for n, line in enumerate(lines, 1) if line.strip() == GYM_PACKAGE_LINE), None)
    return {"file": "uv.lock", "line": str(found)} if found else {}


def capped(level: str, groups: list[tuple[str, str, int]], anchor: dict[str, str]) -> list[str]:
    """One annotation per (title, message, paths) group, most widespread first, at most MAX_PER_LEVEL: the last
    one counts what did not fit."""
    shown = groups if len(groups) <= MAX_PER_LEVEL else groups[: MAX_PER_LEVEL - 1]
    lines = [command(level, message[:MAX_MESSAGE], title=title, **anchor) for title, message, _ in shown]
    rest = groups[len(shown) :]
    if rest:
        paths = sum(n for _, _, n in rest)
        message = f"{len(rest)} more root causes on {paths} paths: the job summary and report.md list every one"
        lines.append(command(level, message, title=f"gymgate: {len(rest)} more", **anchor))
    return lines


def comparison_annotations(comparison: Comparison) -> list[str]:
    """The paths a reviewer must look at, by root cause (report/grouping.py), errors before warnings, within what
    GitHub shows; a Gym that did not stop and a broken baseline are errors of their own."""
    from gymgate.report.grouping import cause_lines  # noqa: PLC0415 - reports load only under a comparison
    from gymgate.report.markdown import cause_groups  # noqa: PLC0415 - reports load only under a comparison

    universe = [p.path for p in comparison.paths]
    anchor = lock_anchor()
    out: list[str] = []
    for level, categories in (("error", ERROR_CATEGORIES), ("warning", WARNING_CATEGORIES)):
        chosen = [p for p in comparison.paths if p.category in categories]
        lines = cause_lines(cause_groups(chosen))
        groups = [
            (_title(line.paths, line.causes[0]), line.text(universe) + _example(line.paths[0]), len(line.paths))
            for line in lines
        ]
        caused = {p.path for line in lines for p in line.paths}
        for category in categories:  # paths with no cause of their own, by category
            bare = [p for p in chosen if p.category == category and p.path not in caused]
            if bare:
                said = f"{len(bare)} {category}: {describe(bare, universe)}" + _example(bare[0])
                groups.append((_title(bare, category), said, len(bare)))
        if level == "error":
            groups += [
                ("gymgate: lifecycle", f"did not stop within its bound and was killed: {problem}", 1)
                for problem in comparison.lifecycle.get("candidate", [])
            ]
            if comparison.baseline_broken:
                groups.append(("gymgate: baseline BROKEN", comparison.baseline_broken, 1))
        out += capped(level, sorted(groups, key=lambda g: -g[2]), anchor)
    return out


def _title(items: list[PathComparison], cause: str) -> str:
    """A path alone by its id and category; several by their shared cause and how many."""
    if len(items) == 1:
        return f"gymgate: {items[0].path} {items[0].category}"
    return f"gymgate: {cause[:120]} ({len(items)} paths)"


def describe(items: list[PathComparison], universe: list[str]) -> str:
    from gymgate.report.grouping import describe_paths  # noqa: PLC0415 - reports load only under a comparison

    return describe_paths([p.path for p in items], universe)


def _example(item: PathComparison) -> str:
    """What the first path's failure said, when it says more than its causes."""
    said = item.reason.splitlines()[0] if item.reason else ""
    return f"\ne.g. {item.path}: {said}" if said else ""


def run_annotations(records: list[PathRecord]) -> list[str]:
    """A run judged alone (no baseline): the paths that did not pass or skip, grouped by how and why they ended."""
    groups: dict[tuple[str, str], list[PathRecord]] = {}
    for record in records:
        if record.outcome not in (PASS, SKIP):
            why = record.reason.splitlines()[0][:200] if record.reason else ""
            groups.setdefault((f"{record.outcome}{f' [{record.blame}]' if record.blame else ''}", why), []).append(
                record
            )
    found = [
        (
            f"gymgate: {items[0].path if len(items) == 1 else f'{len(items)} paths'} {how}",
            f"{how} {why}\n" + ", ".join(r.path for r in items),
            len(items),
        )
        for (how, why), items in groups.items()
    ]
    return capped("error", sorted(found, key=lambda g: -g[2]), lock_anchor())


COMMENT_LIMIT = 65536  # characters GitHub takes in an issue or PR comment's body
COMMENT_MARKER = "<!-- gymgate-report -->"  # how the workflow finds its own comment to update


def run_url() -> str:
    """This Actions run's page (its artifacts hold the run folders), or "" outside Actions."""
    parts = [os.environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else ""


def pr_comment(markdown: str, limit: int = COMMENT_LIMIT) -> str:
    """report.md as one PR comment: whole when it fits, else cut at the last section that fits (never inside a
    table or a code block) with a line saying where the whole report is."""
    where = run_url()
    whole = (
        f"the whole report is report.md in this run's artifacts: {where}" if where else "the whole report is report.md"
    )
    body = f"{COMMENT_MARKER}\n{markdown.rstrip()}\n"
    if len(body) <= limit:
        return body
    note = f"\n\n**… cut to fit a GitHub comment ({len(body):,} characters): {whole}.**\n"
    room = limit - len(note)
    cut = body.rfind("\n### ", 0, room)
    cut = cut if cut > 0 else body.rfind("\n\n", 0, room)
    return body[: max(cut, 0)].rstrip() + note


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
