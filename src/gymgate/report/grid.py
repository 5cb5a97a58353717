"""Grids people would rather see than read: environments down, releases (a matrix) or kinds of path (one bump)
across, each cell coloured by how it went and saying it in a few characters. Computed here as values; the pages
draw them as inline SVG (templates/grid.svg.j2), so a report stays one self-contained file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.compare.runs import Comparison
from gymgate.outcomes import PASS, SKIP
from gymgate.pathid import PathId, kinds
from gymgate.results import Matrix
from gymgate.runfolder import RunFolder
from gymgate.verdict import ACTIONABLE, CATEGORIES, FAILING, FLAKY, UNJUDGED

# A cell's tone is one of the report's colours (style.css.j2): bad, warn, good, plain; "" is an empty cell.
BAD, WARN, GOOD, PLAIN, EMPTY = "bad", "warn", "good", "plain", ""


def share_tone(done: int, of: int) -> str:
    """Green when all of them, red when none, amber in between."""
    return GOOD if done == of else BAD if done == 0 else WARN


@dataclass(frozen=True)
class Cell:
    text: str
    tone: str
    title: str  # what hovering says: the counts behind the text


@dataclass
class Grid:
    rows: list[str]
    columns: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    quiet: int = 0  # rows left out: environments where nothing is to look at

    def cell(self, row: str, column: str) -> Cell:
        return self.cells.get((row, column), Cell("", EMPTY, "no path"))


def matrix_grid(matrix: Matrix) -> Grid:
    """Environments × refs: how many of an environment's paths pass on each ref."""
    envs = sorted({PathId(p).env for p in matrix.paths})
    grid = Grid(envs, [r.asked for r in matrix.refs])
    for ref in matrix.refs:
        for env in envs:
            outcomes = Counter(r.outcome for p, r in ref.records.items() if PathId(p).env == env)
            judged = sum(n for o, n in outcomes.items() if o != SKIP)
            if not judged:
                if outcomes:
                    grid.cells[(env, ref.asked)] = Cell("absent", PLAIN, "not in this Gym")
                continue
            passed = outcomes.get(PASS, 0)
            tone = share_tone(passed, judged)
            title = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))
            grid.cells[(env, ref.asked)] = Cell(f"{passed}/{judged}", tone, title)
    return grid


def _severity(category: str) -> tuple[int, int]:
    """The category a cell shows first: what fails, then what needs a look, then the rest, in report order."""
    rank = 0 if category in FAILING else 1 if category in (UNJUDGED, FLAKY) else 2 if category in ACTIONABLE else 3
    return rank, CATEGORIES.index(category)


def bump_grid(comparison: Comparison) -> Grid:
    """Environments × kinds of path for one bump: the most telling category of each, with how many paths; only the
    environments with a path to look at."""
    by_cell: dict[tuple[str, str], Counter] = {}
    for item in comparison.paths:
        path = PathId(item.path)
        by_cell.setdefault((path.env, path.kind.name), Counter())[item.category] += 1
    present = {kind for _, kind in by_cell}
    # An environment where nothing is to look at is counted, not drawn: a bump of hundreds stays a picture.
    telling = {env for (env, _), counted in by_cell.items() if any(c in ACTIONABLE for c in counted)}
    grid = Grid(sorted(telling), [k.name for k in kinds() if k.name in present])
    grid.quiet = len({env for env, _ in by_cell} - telling)
    for key, counted in by_cell.items():
        if key[0] not in telling:
            continue
        shown = min(counted, key=_severity)
        rank, _ = _severity(shown)
        tone = BAD if rank == 0 else WARN if rank == 1 else GOOD if rank == 2 else PLAIN
        title = ", ".join(f"{n} {c}" for c, n in sorted(counted.items(), key=lambda kv: _severity(kv[0])))
        grid.cells[key] = Cell(f"{counted[shown]} {shown}", tone, title)
    return folded(grid)


RECORDED = "recorded"  # the replay grid's first column
REPLAYS = "recording"  # the kind of path (pathkinds.toml) a replay is


def _recorded_rewards(comparison: Comparison) -> dict[str, float]:
    """The reward each replayed recording earned against its real model: what its path expects (the runs' plans)."""
    found: dict[str, float] = {}
    for info in (comparison.baseline, comparison.candidate):
        for spec in RunFolder(Path(info["dir"])).plan() or []:
            reward = (spec.get("expect") or {}).get("reward")
            if PathId(spec["id"]).kind.name == REPLAYS and isinstance(reward, (int, float)):
                found.setdefault(spec["id"], float(reward))
    return found


def replay_grid(comparison: Comparison, labels: tuple[str, str]) -> Grid:
    """Environments × (recorded, baseline, candidate): the mean reward Gym's own recordings earned, and what their
    replays earn on each ref — green where every replay earns its recording's reward."""
    recorded = _recorded_rewards(comparison)
    sides = {labels[0]: comparison.baseline_records, labels[1]: comparison.candidate_records}
    envs = sorted({PathId(p).env for p in recorded})
    grid = Grid(envs, [RECORDED, *labels])
    for env in envs:
        mine = {p: r for p, r in recorded.items() if PathId(p).env == env}
        grid.cells[(env, RECORDED)] = Cell(
            f"{sum(mine.values()) / len(mine):.2f}", PLAIN, f"mean of {len(mine)} recordings"
        )
        for label, records in sides.items():
            got = {p: r.reward for p, r in records.items() if p in mine and isinstance(r.reward, (int, float))}
            ran = [records[p] for p in mine if p in records and records[p].outcome != SKIP]
            if not ran:  # not in that Gym, or not replayable here (the records say why)
                grid.cells[(env, label)] = Cell("not replayed", PLAIN, "no replay of this environment ran on this ref")
                continue
            same = sum(1 for p, reward in got.items() if abs(reward - mine[p]) < 1e-9)
            tone = share_tone(same, len(mine))
            text = f"{sum(got.values()) / len(got):.2f}" if got else "no reward"
            grid.cells[(env, label)] = Cell(text, tone, f"{same} of {len(mine)} replays earn their recorded reward")
    return grid


def folded(grid: Grid) -> Grid:
    """Rows that read the same, cell for cell, drawn once: `env004 and 237 more` (hundreds of environments changed
    the same way are one row, the one that differs stands out)."""
    alike: dict[tuple, list[str]] = {}
    for row in grid.rows:
        alike.setdefault(tuple((grid.cell(row, c).text, grid.cell(row, c).tone) for c in grid.columns), []).append(row)
    if all(len(rows) == 1 for rows in alike.values()):
        return grid
    out = Grid([], grid.columns, quiet=grid.quiet)
    for rows in alike.values():
        label = rows[0] if len(rows) == 1 else f"{rows[0]} and {len(rows) - 1} more"
        out.rows.append(label)
        for column in grid.columns:
            cell = grid.cell(rows[0], column)
            if cell.tone:
                out.cells[(label, column)] = Cell(cell.text, cell.tone, f"{cell.title} (each of {len(rows)})")
    return out
