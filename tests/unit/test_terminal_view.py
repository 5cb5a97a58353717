"""The terminal's view of a comparison fits one screen as the terminal shows it (report/terminal.py), at 80 columns
as at 120, whatever the size of the bump: root causes on the same paths are one line, changes that move together are one line, path lists collapse
(`all 14 paths`, `7 environments × accepted`); report.md keeps every field. A downgrade says so, and no review of
the upgrade covers its reverse."""

from __future__ import annotations

from pathlib import Path

import pytest

from gymgate.compare import acks
from gymgate.compare.runs import compare_runs
from gymgate.report.grouping import describe_paths
from gymgate.report.markdown import render_markdown
from gymgate.report.terminal import SCREEN_ROWS, render_terminal
from gymgate.verdict import downgrade
from tests.helpers import NEWER_RESULT_FIELDS, bump_runs, default_environments

SEVEN = default_environments()


@pytest.fixture(autouse=True)
def outside_nox(monkeypatch):
    """The next steps name `gymgate …` when gymgate ran on its own, `nox -s … --` under nox (as the test suite runs)."""
    from gymgate.report.next_steps import NOX_SESSION_VAR

    monkeypatch.delenv(NOX_SESSION_VAR, raising=False)


def shown_at(comparison, width: int = 100) -> list[str]:
    """The view at `width` columns: never more rows than a screen, no row past the width but a command (pasted
    whole)."""
    rows = render_terminal(comparison, "report.md, report.html", Path("/runs/cand"), width).splitlines()
    assert len(rows) <= SCREEN_ROWS, rows
    # A row runs past the width only where one word does (a long path), or where it is a command to paste: the
    # terminal wraps it whole (and it is counted for every row it takes).
    commands = ("  gymgate ", "  nox ", "  open ")
    assert all(len(r) <= width or r.startswith(commands) or max(map(len, r.split())) > width - 10 for r in rows), [
        r for r in rows if len(r) > width
    ]
    return rows


def test_a_downgrade_reads_in_one_screen_and_says_it_is_a_downgrade(tmp_path):
    base, cand = bump_runs(tmp_path, SEVEN)
    comparison = compare_runs(base, cand)
    shown = shown_at(comparison, width=200)
    assert shown[2].startswith("Verdict: downgrade 0.7.0 → 0.4.0: 0 regressed, 0 broken, 14 changed")
    # 19 fields, one line, all paths named by their shape (no path id spelled out).
    bundle = [line for line in shown if line.startswith("• 19 fields of 0.7.0's result that the older 0.4.0 lacks")]
    assert len(bundle) == 1 and bundle[0].endswith("— all 14 paths"), shown
    assert not [line for line in shown if ":accepted" in line or ":rejected" in line]
    assert shown[-1].startswith("Full report: report.md, report.html")
    # What to run next, with the real run folders: the changes to review.
    assert shown[shown.index("Next:") + 2].startswith("  gymgate ack "), shown
    narrow = shown_at(comparison, width=80)
    assert narrow[2].startswith("Verdict: downgrade") and any(r.startswith("  gymgate ack ") for r in narrow)
    # report.md keeps every field.
    report = render_markdown(comparison)
    assert all(f"`result.response.{name}`" in report for name in NEWER_RESULT_FIELDS)


def test_a_dropped_temperature_on_every_path_is_one_root_cause_line(tmp_path):
    base, cand = bump_runs(tmp_path, SEVEN, contract=SEVEN, baseline="0.4.0", candidate="0.4.0")
    shown = shown_at(compare_runs(base, cand))
    assert shown[2] == "Verdict: 14 regressed, 0 broken."
    causes = [line for line in shown if line.startswith("• [request_contract]")]
    assert causes == ["• [request_contract] policy request — all 14 paths (regressed)"]
    rerun = [line for line in shown if line.startswith("  gymgate accept ")]
    assert rerun == ["  gymgate accept --gym-ref 0.4.0 --baseline 0.4.0 --paths @/runs/cand/retry.txt"], shown


def test_five_hundred_paths_still_fit_and_say_how_much_more_report_md_has(tmp_path):
    envs = [f"env{n:03d}" for n in range(250)]
    # Sixty environments each fail in its own way: more root-cause lines than a screen holds.
    base, cand = bump_runs(tmp_path, envs, contract=envs[:60])
    comparison = compare_runs(base, cand)
    for env in envs[60:120]:  # each of these regressed with its own cause
        for mode in ("accepted", "rejected"):
            item = next(p for p in comparison.paths if p.path == f"{env}:{mode}")
            item.causes = [f"[reward] {env}"]
    for width in (80, 120):
        shown = shown_at(comparison, width)
        assert any(line.startswith("… ") and line.endswith("more rows in report.md") for line in shown), shown
        assert "-v" in shown[-1] and "Next:" in shown


@pytest.mark.parametrize(
    ("paths", "said"),
    [
        (["a:accepted", "a:rejected", "b:accepted", "b:rejected"], "all 4 paths"),
        (["a:accepted", "b:accepted"], "all 2 environments × accepted"),
        (["a:accepted", "a:rejected"], "a × accepted, rejected"),
        (["a:accepted", "b:rejected"], "a × accepted; b × rejected"),
    ],
)
def test_path_sets_are_named_by_their_shape(paths, said):
    universe = ["a:accepted", "a:rejected", "b:accepted", "b:rejected"]
    assert describe_paths(paths, universe) == said


def test_many_environments_are_counted_and_the_few_left_out_named():
    envs = [f"e{n}" for n in range(7)]
    universe = [f"{e}:{m}" for e in envs for m in ("accepted", "rejected")]
    assert describe_paths([f"{e}:accepted" for e in envs], universe) == "all 7 environments × accepted"
    some = [f"{e}:{m}" for e in envs[1:] for m in ("accepted", "rejected")]
    assert describe_paths(some, universe) == "6 environments (all but e0) × accepted, rejected"


def test_reviews_are_directed_an_upgrades_acks_never_cover_its_downgrade():
    """The committed reviews link 0.4.0 to 0.7.0; nothing links 0.7.0 back to 0.4.0."""
    files = acks.read(acks.acks_dir())
    digest = {f.baseline: f.digests[0] for f in files} | {f.candidate: f.digests[1] for f in files}
    up = acks.chains(files, {"digest": digest["0.4.0"]}, {"digest": digest["0.7.0"]})
    steps = ["0.4.0→0.5.0", "0.5.0→0.5.1", "0.5.1→0.6.0", "0.6.0→0.7.0"]
    assert [[f"{s.baseline}→{s.candidate}" for s in route] for route in up] == [steps]  # not the pair's own file
    assert acks.chains(files, {"digest": digest["0.7.0"]}, {"digest": digest["0.4.0"]}) == []
    assert downgrade({"version": "0.7.0"}, {"version": "0.4.0"})
    assert not downgrade({"version": "0.4.0"}, {"version": "0.7.0"})
    assert not downgrade({"version": "0.4.0"}, {"version": "a-branch"})  # unknown order: not called a downgrade


def test_compare_prints_one_screen_and_v_prints_report_md(tmp_path, capfd):
    from gymgate.cli import main

    base, cand = bump_runs(tmp_path, SEVEN, regressed=["mcqa"])
    assert main(["compare", str(base), str(cand)]) == 1
    shown = capfd.readouterr().out.strip().splitlines()
    assert len(shown) <= SCREEN_ROWS and f"Full report: {cand / 'report.md'}, results.json" in " ".join(shown[-3:])
    assert main(["compare", "-v", str(base), str(cand)]) == 1
    full = capfd.readouterr().out
    assert (cand / "report.md").read_text() in full and "written: " in full


def test_one_field_with_other_values_on_other_paths_is_one_line(tmp_path):
    """A token count that differs by environment changes the same way everywhere: one line, each value pair kept
    (with its paths) in report.md."""
    from tests.helpers import observation, record, stored_run

    base = stored_run(tmp_path, "a", "0.4.0", [record(f"{e}:accepted", "PASS") for e in SEVEN])
    cand = stored_run(
        tmp_path,
        "b",
        "0.4.0",
        [record(f"{e}:accepted", "PASS", observed=observation(params={"seed": n})) for n, e in enumerate(SEVEN)],
    )
    comparison = compare_runs(base, cand)
    shown = shown_at(comparison, width=120)
    changes = [line for line in shown if line.startswith("• requests.policy.*.body.seed")]
    assert changes == [
        "• requests.policy.*.body.seed new in 0.4.0: 7 values by path (RL trains on it) — all 7 paths"
    ], shown
    report = render_markdown(comparison)
    assert "| `requests.policy.*.body.seed` | code_gen × accepted | `<absent>` | `0` |" in report
    assert report.count("| `requests.policy.*.body.seed` |") == 7


def test_under_nox_the_next_steps_are_nox_sessions(tmp_path, monkeypatch):
    """Who ran `nox -s accept` has nox, not a `gymgate` on PATH: the commands it is shown are its sessions."""
    from gymgate.report.next_steps import NOX_SESSION_VAR

    monkeypatch.setenv(NOX_SESSION_VAR, "accept")
    base, cand = bump_runs(tmp_path, SEVEN, contract=SEVEN, baseline="0.4.0", candidate="0.4.0")
    rerun = [line for line in shown_at(compare_runs(base, cand)) if "--paths @" in line]
    assert rerun == ["  nox -s accept -- --gym-ref 0.4.0 --baseline 0.4.0 --paths @/runs/cand/retry.txt"]
