"""What a maintainer runs next after a verdict, as exact commands with the real run folders in them: review the
unacknowledged contract changes, rerun what did not pass, bisect a regression between two commits, open the report.
The terminal, report.md and report.html end with the same list."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from gymgate.compare.runs import Comparison
from gymgate.refs.source import KIND_GIT, KIND_TREE, KIND_WHEEL
from gymgate.report.outputs import RETRY, RETRY_CATEGORIES
from gymgate.verdict import CHANGED, FAILING, REGRESSED

NOX_SESSION_VAR = "NOX_CURRENT_SESSION"  # set by nox in a session's commands: gymgate runs through nox here


def invocation(command: str, args: str) -> str:
    """How the person who ran this asks gymgate again: through nox when nox ran it (the noxfile has a session per
    command: `nox -s ack -- …`), else the `gymgate` command itself."""
    if os.environ.get(NOX_SESSION_VAR):
        return f"nox -s {command} -- {args}"
    return f"gymgate {command} {args}"


@dataclass(frozen=True)
class NextStep:
    why: str
    command: str
    to_report: bool = False  # opens the report itself: the report's own page leaves it out


def ref_argument(source: dict) -> str:
    """How to ask for this ref again on the command line: a checkout or wheel by its path, a git ref by its
    commit, a pin or an index version by its name."""
    if source.get("kind") in (KIND_TREE, KIND_WHEEL) and source.get("path"):
        return str(source["path"])
    if source.get("kind") == KIND_GIT and source.get("commit"):
        return str(source["commit"])
    return str(source.get("name"))


def ack_command(comparison: Comparison) -> str:
    """The command that drafts this comparison's acknowledgements, with its two run folders."""
    return invocation("ack", f"{shlex.quote(comparison.baseline['dir'])} {shlex.quote(comparison.candidate['dir'])}")


def next_steps(comparison: Comparison, out_dir: Path) -> list[NextStep]:
    baseline, candidate = comparison.baseline, comparison.candidate
    steps = []
    groups = comparison.by_category()
    if groups.get(CHANGED):
        steps.append(
            NextStep(
                "review the contract changes: draft their acknowledgements, fill in each reason, commit the file",
                ack_command(comparison),
            )
        )
    if any(p.category in RETRY_CATEGORIES for p in comparison.paths):
        refs = f"--gym-ref {shlex.quote(ref_argument(candidate))} --baseline {shlex.quote(ref_argument(baseline))}"
        steps.append(
            NextStep(
                "rerun only the paths that did not pass",
                invocation("accept", f"{refs} --paths @{shlex.quote(str(out_dir / RETRY))}"),
            )
        )
    if groups.get(REGRESSED) and baseline.get("kind") == candidate.get("kind") == KIND_GIT:
        steps.append(
            NextStep(
                "find the commit that regressed them",
                invocation(
                    "bisect",
                    f"--good {baseline['commit']} --bad {candidate['commit']} "
                    f"--gym-repo {shlex.quote(str(candidate.get('origin')))} --paths @{shlex.quote(str(out_dir / RETRY))}",
                ),
            )
        )
    if any(p.category in FAILING for p in comparison.paths) or steps:
        report = f"open {shlex.quote(str(out_dir / 'report.html'))}"
        steps.append(NextStep("read every path's evidence", report, to_report=True))
    return steps


def next_lines(comparison: Comparison, out_dir: Path) -> list[str]:
    """The steps as a terminal or report.md shows them: the why, then the command to paste."""
    lines = []
    for step in next_steps(comparison, out_dir):
        lines += [f"# {step.why}", step.command]
    return lines
