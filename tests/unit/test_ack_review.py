"""A repository's own reviews beside gymgate's (compare/acks.Reviews: read together, the repository's winning and
said), and reviewing like snapshots (harness/ack_review.py): accept with a reason or skip, each answer written into
the pair's file keeping what a person wrote there."""

from __future__ import annotations

import tomllib

import pytest

from gymgate.cli import main
from gymgate.compare.acks import Reviews
from gymgate.compare.runs import compare_runs
from gymgate.errors import UsageError
from gymgate.harness.ack_review import review
from tests.helpers import observation, record, stored_run


def _bump(tmp_path, seed=0):
    base = stored_run(tmp_path, "a", "0.3.0", [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "PASS")])
    changed = observation(params={"seed": seed, "top_p": 0.5})
    cand = stored_run(
        tmp_path,
        "b",
        "0.4.0",
        [
            record("mcqa:accepted", "PASS", observed=changed),
            record("mcqa:rejected", "PASS", observed=observation(params={"seed": seed})),
        ],
    )
    return base, cand


def _answers(*given):
    queue = list(given)

    def ask(_prompt: str) -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return ask


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """gymgate's own reviews, in a folder of the test's."""
    folder = tmp_path / "gymgate-acks"
    folder.mkdir()
    monkeypatch.setattr("gymgate.compare.acks.acks_dir", lambda: folder)
    monkeypatch.chdir(tmp_path)
    return folder


def test_a_review_walk_accepts_skips_and_keeps_what_a_person_wrote(tmp_path, shipped):
    base, cand = _bump(tmp_path)
    ours = tmp_path / "reviews"
    comparison = compare_runs(base, cand, Reviews([ours]))
    assert len([g for g in comparison.change_groups() if g.failing]) == 2
    said: list[str] = []
    done = review(comparison, ours, Reviews([ours]), _answers("a", "", "Gym sends a seed now", "s"), said.append)
    assert (done.accepted, done.skipped, done.left) == (1, 1, 0)  # an empty reason is asked again, not taken
    assert any("before: <absent>" in line and "paths:" in line for line in said)
    text = done.file.read_text()
    assert 'reason = "Gym sends a seed now"' in text
    assert compare_runs(base, cand, Reviews([ours])).exit_code == 1  # the skipped one is still open

    # A person annotates the file and reorders nothing else; a second pass answers the rest and keeps it all.
    annotated = text.replace("\n[[change]]\n", "\n# reviewed with the RL team on 2026-12-06\n[[change]]\n", 1)
    done.file.write_text(annotated)
    again = compare_runs(base, cand, Reviews([ours]))
    done = review(again, ours, Reviews([ours]), _answers("top_p reaches the model as RL set it"), said.append)
    assert (done.accepted, done.left) == (1, 0)
    text = done.file.read_text()
    assert "# reviewed with the RL team on 2026-12-06" in text and 'reason = "Gym sends a seed now"' in text
    assert compare_runs(base, cand, Reviews([ours])).exit_code == 0

    # The plain draft keeps the comment too.
    assert main(["ack", str(base), str(cand), "--acks", str(ours)]) == 0
    assert "# reviewed with the RL team on 2026-12-06" in done.file.read_text()


def test_a_walk_stops_at_quit_or_the_end_of_input_losing_no_answer(tmp_path, shipped):
    base, cand = _bump(tmp_path)
    ours = tmp_path / "reviews"
    done = review(compare_runs(base, cand, Reviews([ours])), ours, Reviews([ours]), _answers("first reason"), print)
    assert (done.accepted, done.left) == (1, 1)
    assert 'reason = "first reason"' in done.file.read_text()
    done = review(compare_runs(base, cand, Reviews([ours])), ours, Reviews([ours]), _answers("q"), print)
    assert (done.accepted, done.left) == (0, 1)


def test_the_repositorys_review_wins_over_gymgates_and_the_report_says_so(tmp_path, shipped, capsys):
    base, cand = _bump(tmp_path)
    theirs = Reviews([], shipped_acks=True)
    review(compare_runs(base, cand, theirs), shipped, theirs, _answers("gymgate: seeds are fine", "gymgate: notes"))
    assert compare_runs(base, cand, theirs).exit_code == 0  # gymgate's own reviews alone cover the bump

    ours = tmp_path / "reviews"
    mine, alone = Reviews([ours]), Reviews([ours], shipped_acks=False)
    review(compare_runs(base, cand, alone), ours, alone, _answers("ours: we checked RL's sampler", "q"))
    comparison = compare_runs(base, cand, mine)
    reasons = {g.field: g.ack for g in comparison.change_groups()}
    assert reasons["requests.policy.*.body.seed"] == "ours: we checked RL's sampler"  # yours win
    assert reasons["requests.policy.*.body.top_p"] == "gymgate: notes"  # gymgate's cover the rest
    assert (
        len(comparison.acks.overridden) == 1 and "reviews/0.3.0-to-0.4.0.toml change 1" in comparison.acks.overridden[0]
    )
    assert main(["compare", str(base), str(cand), "--acks", str(ours)]) == 0
    assert "your repository's, which wins" in (cand / "report.md").read_text()
    # Without gymgate's own, only yours apply: top_p is open again.
    assert main(["compare", str(base), str(cand), "--acks", str(ours), "--no-shipped-acks"]) == 1


def test_ack_writes_into_the_repositorys_folder(tmp_path, shipped, monkeypatch):
    base, cand = _bump(tmp_path)
    ours = tmp_path / "reviews"
    assert main(["ack", str(base), str(cand), "--acks", str(ours)]) == 0
    assert [p.name for p in ours.glob("*.toml")] == ["0.3.0-to-0.4.0.toml"] and not list(shipped.glob("*.toml"))
    entries = tomllib.loads((ours / "0.3.0-to-0.4.0.toml").read_text())["change"]
    assert {e["field"] for e in entries} == {"requests.policy.*.body.seed", "requests.policy.*.body.top_p"}


def test_an_installed_gymgate_asks_where_your_reviews_go(monkeypatch):
    monkeypatch.setattr("gymgate.compare.acks.installed", lambda: True)
    with pytest.raises(UsageError, match="--acks DIR"):
        Reviews().target()


def test_ack_without_a_run_takes_the_newest_compared_one(tmp_path, shipped, capsys):
    base, cand = _bump(tmp_path)
    ours = tmp_path / "reviews"
    assert main(["ack", "--acks", str(ours), "--runs-dir", str(tmp_path)]) == 2  # nothing compared yet
    assert "no compared run" in capsys.readouterr().err
    assert main(["compare", str(base), str(cand), "--acks", str(ours)]) == 1
    assert main(["ack", "--acks", str(ours), "--runs-dir", str(tmp_path)]) == 0
    assert f"acknowledging {cand}" in capsys.readouterr().out
    assert (ours / "0.3.0-to-0.4.0.toml").is_file()
