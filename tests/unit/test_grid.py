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
                "mcqa:fault.policy_503_retry_after_once": "same-pass",
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


def test_replays_show_the_reward_their_recordings_earned_beside_what_each_ref_earns(tmp_path):
    """Recorded reward from the plan (what each replay expects), each ref's mean replayed reward, green only where
    every replay earns its recording's reward; an environment a ref did not replay is said so, not painted red."""
    from gymgate.compare.runs import compare_runs
    from gymgate.report.grid import PLAIN, RECORDED, WARN, replay_grid
    from gymgate.runfolder import RunFolder
    from tests.helpers import record, stored_run

    plan = [{"id": f"mcqa:rec.{k}", "expect": {"reward": 1.0}} for k in ("a", "b")]
    plan += [{"id": "code_gen:rec.c", "expect": {"reward": 0.0}}]
    base = stored_run(tmp_path, "a", "0.4.0", [record("mcqa:rec.a", "PASS", reward=1.0), record("mcqa:rec.b", "PASS", reward=1.0),
                                              record("code_gen:rec.c", "SKIP")])  # fmt: skip
    cand = stored_run(tmp_path, "b", "0.7.0", [record("mcqa:rec.a", "PASS", reward=1.0), record("mcqa:rec.b", "FAIL", reward=0.0),
                                              record("code_gen:rec.c", "PASS", reward=0.0)])  # fmt: skip
    for run in (base, cand):
        RunFolder(run).write_plan(plan)
    grid = replay_grid(compare_runs(base, cand), ("0.4.0", "0.7.0"))
    assert grid.columns == [RECORDED, "0.4.0", "0.7.0"] and grid.rows == ["code_gen", "mcqa"]
    assert grid.cell("mcqa", RECORDED).text == "1.00"
    assert (grid.cell("mcqa", "0.4.0").text, grid.cell("mcqa", "0.4.0").tone) == ("1.00", GOOD)
    assert (grid.cell("mcqa", "0.7.0").text, grid.cell("mcqa", "0.7.0").tone) == ("0.50", WARN)
    assert (grid.cell("code_gen", "0.4.0").text, grid.cell("code_gen", "0.4.0").tone) == ("not replayed", PLAIN)
    assert grid.cell("code_gen", "0.7.0").tone == GOOD
