"""The pictures' data (report/grid.py): a bump's environments × kinds of path show each cell's most telling
category, leave out environments where nothing is to look at, and draw rows that read the same once."""

from __future__ import annotations

from gymgate.compare.runs import Comparison, PathComparison
from gymgate.report.grid import BAD, GOOD, bump_grid


def _bump(categories: dict[str, str]) -> Comparison:
    paths = [PathComparison(path, "PASS", "PASS", category) for path, category in categories.items()]
    return Comparison({"name": "a"}, {"name": "b"}, paths, None)


def test_a_cell_shows_what_fails_first_and_quiet_environments_are_counted():
    grid = bump_grid(
        _bump(
            {
                "mcqa:accepted": "same-pass",
                "mcqa:rejected": "regressed",
                "mcqa:rec.abc": "fixed",
                "mcqa:fault.policy_503_once": "same-pass",
                "code_gen:accepted": "same-pass",
                "code_gen:rejected": "same-pass",
            }
        )
    )
    assert grid.rows == ["mcqa"] and grid.quiet == 1  # code_gen: nothing to look at
    assert grid.columns == ["handwritten", "fault", "recording"]  # the kinds present, in plan order
    cell = grid.cell("mcqa", "handwritten")
    assert (cell.text, cell.tone) == ("1 regressed", BAD) and "1 same-pass" in cell.title
    assert (grid.cell("mcqa", "recording").text, grid.cell("mcqa", "recording").tone) == ("1 fixed", GOOD)


def test_environments_that_read_the_same_are_one_row():
    same = {f"env{n:03d}:{m}": "changed" for n in range(40) for m in ("accepted", "rejected")}
    grid = bump_grid(_bump({**same, "odd:accepted": "regressed"}))
    assert sorted(grid.rows) == ["env000 and 39 more", "odd"]
    assert "(each of 40)" in grid.cell("env000 and 39 more", "handwritten").title
