"""The terminal's view of a comparison: one screen, as the terminal shows it, ending with what to run next.

The sections report/markdown.py chooses for the terminal are laid out at the terminal's width and cut to
SCREEN_ROWS rows *as shown* (a long line counts every row it wraps onto); a section cut short says how much more
report.md holds. Markdown's marks become styles (rich): headings and the verdict bold, the verdict coloured by
its exit code, bullets hanging. The next steps (report/next_steps.py) and where the reports are always fit: the
sections give way to them. `-v` prints all of report.md instead.
"""

from __future__ import annotations

import math
import re
import shutil
import textwrap
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from gymgate.compare.runs import Comparison
from gymgate.errors import EXIT_FAILED, EXIT_OK
from gymgate.report.markdown import terminal_sections
from gymgate.report.next_steps import next_steps

SCREEN_ROWS = 40
MIN_WIDTH = 40  # narrower than this, the view is laid out as if it were this wide
_INLINE = re.compile(r"\*\*|`")
VERDICT_STYLE = {EXIT_OK: "bold green", EXIT_FAILED: "bold red"}  # any other code: nothing judged


def width_of_terminal() -> int:
    return max(shutil.get_terminal_size((100, SCREEN_ROWS)).columns, MIN_WIDTH)


def _plain(line: str) -> str:
    return _INLINE.sub("", line)


def _rows(line: str, width: int) -> int:
    return max(1, math.ceil(len(line) / width))


def _styled(line: str, code: int) -> tuple[str, str]:
    """One Markdown line of the sections as the terminal shows it (before wrapping), and its style."""
    if line.startswith("**Verdict:"):
        return _plain(line), VERDICT_STYLE.get(code, "bold yellow")
    if line.startswith("#"):
        return _plain(line.lstrip("#").strip()), "bold"
    if line.startswith("- "):
        return "• " + _plain(line[2:]), ""
    if line.startswith("  - "):
        return "    ◦ " + _plain(line[4:]), "dim"
    return _plain(line), ""


def _wrapped(text: str, width: int) -> list[str]:
    if not text:
        return [""]
    indent = " " * (len(text) - len(text.lstrip(" •◦#")))  # a bullet's or a comment's text hangs under itself
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False) or [""]


def view_rows(comparison: Comparison, reports: str, out_dir: Path, width: int) -> list[tuple[str, str]]:
    """The view as (row, style) pairs, at most SCREEN_ROWS rows as a terminal `width` wide shows them: text is
    wrapped to the width, a word longer than it (a command, a run folder) is never broken — it pastes whole — and
    counts every row the terminal wraps it onto."""
    code = comparison.exit_code
    footer: list[tuple[str, str]] = []
    steps = next_steps(comparison, out_dir)
    if steps:
        footer.append(("Next:", "bold"))
        for step in steps:
            footer += [(row, "dim") for row in _wrapped(f"  # {step.why}", width)]
            footer.append((f"  {step.command}", "cyan"))
    footer += [(row, "") for row in _wrapped(f"Full report: {reports} (-v prints it here).", width)]
    budget = SCREEN_ROWS - 1 - _shown(footer, width)  # 1: the blank row before the footer
    body: list[tuple[str, str]] = []
    for section in terminal_sections(comparison):
        rows: list[tuple[str, str]] = []
        for line in section:
            text, style = _styled(line, code)
            rows += [(row, style) for row in _wrapped(text, width)]
        room = budget - _shown(body, width)
        if _shown(rows, width) > room:  # a section cut short says how much more report.md holds
            kept = rows[:0]
            while rows[len(kept) :] and _shown([*kept, rows[len(kept)]], width) < room:
                kept.append(rows[len(kept)])
            rows = [*kept, (f"… {len(rows) - len(kept)} more rows in report.md", "dim")] if room > 0 else []
        body += rows
    while body and not body[-1][0]:
        body.pop()
    return [*body, ("", ""), *footer] if body else footer


def _shown(rows: list[tuple[str, str]], width: int) -> int:
    """The rows these take on a terminal `width` wide (a row longer than the width wraps onto more)."""
    return sum(_rows(row, width) for row, _ in rows)


def render_terminal(comparison: Comparison, reports: str, out_dir: Path, width: int | None = None) -> str:
    """The view as plain text (what a pipe or a test reads)."""
    return "\n".join(row for row, _ in view_rows(comparison, reports, out_dir, width or width_of_terminal()))


def print_terminal(comparison: Comparison, reports: str, out_dir: Path, out: TextIO) -> None:
    """The view on `out`, styled when `out` is a terminal (rich decides; NO_COLOR is honoured)."""
    width = width_of_terminal()
    console = Console(file=out, width=width, soft_wrap=True, highlight=False)
    for row, style in view_rows(comparison, reports, out_dir, width):
        console.print(Text(row, style=style))
