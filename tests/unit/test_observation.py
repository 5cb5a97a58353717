"""The full-observation diff (compare/observation.py) and reviewed acknowledgements (compare/acks.py): what is a
contract change, what is additive, what the nondeterminism list hides, and the ack workflow end to end through the
CLI: draft, refused without a reason, acknowledged with one, not covering a different value, stale, never hiding a
failure."""

from __future__ import annotations

import json
import re
import tomllib

from gymgate.cli import main
from gymgate.compare.acks import Reviews
from gymgate.compare.observation import ABSENT, ADDITIVE, CONTRACT, diff, side_by_side, text_diff
from gymgate.compare.runs import compare_runs
from tests.helpers import observation, record, stored_run


def _kinds(before, after):
    return {c.field: c.kind for c in diff(before, after)}


def test_what_the_model_receives_is_always_contract():
    base = observation()
    assert _kinds(base, observation(params={"seed": 0})) == {"requests.policy.0.body.seed": CONTRACT}
    dropped = observation()
    del dropped["requests"]["policy"][0]["body"]["top_p"]
    assert _kinds(base, dropped) == {"requests.policy.0.body.top_p": CONTRACT}
    cut = observation()
    cut["requests"]["policy"][0]["body"]["messages"][0]["content"] = "Q"
    assert _kinds(base, cut) == {"requests.policy.0.body.messages.0.content": CONTRACT}


def test_gyms_result_new_keys_are_additive_everything_else_contract():
    base = observation(result={"response": {"id": "resp_" + "a" * 32, "output": [{"type": "message"}]}})
    new_key = observation(
        result={"extra": 1, "response": {"id": "resp_" + "a" * 32, "output": [{"type": "message", "routed": None}]}}
    )
    assert _kinds(base, new_key) == {"result.extra": ADDITIVE, "result.response.output.0.routed": ADDITIVE}
    new_item = observation(
        result={"response": {"id": "resp_" + "a" * 32, "output": [{"type": "message"}, {"type": "message"}]}}
    )
    assert _kinds(base, new_item) == {"result.response.output.1": CONTRACT}  # a new element: contract, as a whole
    retyped = observation(result={"reward": "1.0"})
    assert _kinds(observation(), retyped) == {"result.reward": CONTRACT}
    removed = observation(result={"response": {"id": "resp_" + "a" * 32}})
    assert _kinds(observation(), removed) == {"result.response.output": CONTRACT}


def test_declared_nondeterminism_is_ignored_and_nothing_else():
    fresh = observation(result={"response": {"id": "resp_" + "b" * 32, "output": [], "created_at": 2.0}})
    stored = observation(result={"response": {"id": "resp_" + "a" * 32, "output": [], "created_at": 1.0}})
    assert diff(stored, fresh) == []
    not_an_id = observation(result={"response": {"id": "resp_not-a-uuid", "output": [], "created_at": 1.0}})
    assert [c.field for c in diff(stored, not_an_id)] == ["result.response.id"]


def test_a_port_in_an_error_message_is_ignored_and_the_rest_of_the_message_is_not():
    """Gym's failure_reason names the URL it called; each run picks free ports (nondeterministic.toml: within)."""
    before = {"result": {"failure_reason": "ClientResponseError: 500, url='http://127.0.0.1:30968/v1/responses'"}}
    moved = {"result": {"failure_reason": "ClientResponseError: 500, url='http://127.0.0.1:4411/v1/responses'"}}
    other = {"result": {"failure_reason": "ClientResponseError: 503, url='http://127.0.0.1:4411/v1/responses'"}}
    assert diff(before, moved) == []
    (change,) = diff(before, other)
    assert change.field == "result.failure_reason" and "503" in change.after and "<loopback port>" in change.after


def test_long_values_are_shown_where_they_differ():
    before = "system prompt\n" + "line\n" * 50 + "Use the tool."
    after = before.replace("Use the tool.", "Never use the tool.")
    a, b = side_by_side(before, after)
    assert "Use the tool." in a and "Never use the tool." in b and len(a) < 200
    assert "-Use the tool." in text_diff(before, after) and "+Never use the tool." in text_diff(before, after)
    ids = list(range(100))
    a, b = side_by_side(ids, ids[:40] + [7] + ids[41:])
    assert a.startswith("100 items, at 40: ") and "7" in b
    assert side_by_side(ABSENT, 0) == (ABSENT, "0")


def _bump(tmp_path, seed=0, candidate_outcome="PASS"):
    base = stored_run(
        tmp_path,
        f"a{seed}{candidate_outcome}",
        "0.3.0",
        [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "PASS")],
    )
    cand = stored_run(
        tmp_path,
        f"b{seed}{candidate_outcome}",
        "0.4.0",
        [
            record("mcqa:accepted", candidate_outcome, observed=observation(params={"seed": seed})),
            record("mcqa:rejected", "PASS", observed=observation(params={"seed": seed})),
        ],
    )
    return base, cand


def test_ack_workflow(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a repository's reviews are named from where one runs
    acks = tmp_path / "acks"
    base, cand = _bump(tmp_path)
    assert main(["compare", str(base), str(cand), "--acks", str(acks)]) == 1
    assert (
        "**Verdict: 0 regressed, 0 broken, 2 changed (unacknowledged contract changes).**"
        in (cand / "report.md").read_text()
    )

    # The draft: one entry for the change on both paths, with an empty reason.
    assert main(["ack", str(base), str(cand), "--acks", str(acks)]) == 0
    (draft,) = acks.glob("*.toml")
    assert draft.name == "0.3.0-to-0.4.0.toml"
    data = tomllib.loads(draft.read_text())
    (entry,) = data["change"]
    assert entry["field"] == "requests.policy.*.body.seed" and entry["paths"] == ["mcqa:accepted", "mcqa:rejected"]
    assert (entry["before"], entry["after"], entry["reason"]) == ("<absent>", "0", "")
    assert data["candidate"]["digest"] == "d-0.4.0"

    # Without a reason it covers nothing, and says so.
    assert main(["compare", str(base), str(cand), "--acks", str(acks)]) == 1
    assert "refused (no reason" in (cand / "report.md").read_text()

    # With a reason, the comparison passes and shows why.
    draft.write_text(draft.read_text().replace('reason = ""', 'reason = "Gym now sends a seed (reviewed)"'))
    assert main(["compare", str(base), str(cand), "--acks", str(acks)]) == 0
    report = (cand / "report.md").read_text()
    assert "2 with reviewed changes" in report and "**Gym now sends a seed (reviewed)**" in report
    results = json.loads((cand / "results.json").read_text())
    assert results["paths"][0]["changed"][0]["acknowledged"] == "Gym now sends a seed (reviewed)"

    # A different change of the same field is not covered, and the ack that matches nothing is stale.
    base, other = _bump(tmp_path, seed=1)
    comparison = compare_runs(base, other, Reviews([acks]))
    assert {p.category for p in comparison.paths} == {"changed"}
    assert [a.where for a in comparison.acks.stale] == [
        "acks/0.3.0-to-0.4.0.toml change 1 (requests.policy.*.body.seed)"
    ]

    # An entry on paths the comparison did not judge (an environment outside the selection) is not stale.
    reviewed = draft.read_text()
    elsewhere = re.sub(r"paths = \[[^\]]*\]", 'paths = ["code_gen:accepted"]', reviewed)
    assert elsewhere != reviewed
    draft.write_text(elsewhere)
    assert compare_runs(base, other, Reviews([acks])).acks.stale == []
    draft.write_text(reviewed)

    # An ack never hides a failure.
    base, failing = _bump(tmp_path, candidate_outcome="FAIL")
    categories = {p.path: p.category for p in compare_runs(base, failing, Reviews([acks])).paths}
    assert categories == {"mcqa:accepted": "regressed", "mcqa:rejected": "same-pass"}


def test_a_change_acknowledged_on_some_paths_is_still_open_on_the_others(tmp_path, capsys):
    """An acknowledgement names its paths: a path the same change reaches later (a recording replayed) is not
    covered by it, is shown apart, and `gymgate ack` drafts it onto the entry."""
    acks = tmp_path / "acks"
    base, cand = _bump(tmp_path)
    assert main(["ack", str(base), str(cand), "--acks", str(acks)]) == 0
    (draft,) = acks.glob("*.toml")
    text = draft.read_text().replace('reason = ""', 'reason = "Gym now sends a seed (reviewed)"')
    draft.write_text(text.replace('"mcqa:accepted",\n    "mcqa:rejected",', '"mcqa:accepted",'))
    comparison = compare_runs(base, cand, Reviews([acks]))
    assert {p.path: p.category for p in comparison.paths} == {"mcqa:accepted": "same-pass", "mcqa:rejected": "changed"}
    groups = comparison.change_groups()
    assert [(g.paths, g.failing) for g in groups] == [(["mcqa:rejected"], True), (["mcqa:accepted"], False)]
    capsys.readouterr()
    assert main(["ack", str(base), str(cand), "--acks", str(acks)]) == 0
    said = capsys.readouterr().out
    assert "0 new change(s) to review" in said
    assert "1 path(s) added to entries already reviewed (check the reason holds for them): mcqa:rejected" in said
    (entry,) = tomllib.loads(draft.read_text())["change"]
    assert entry["paths"] == ["mcqa:accepted", "mcqa:rejected"] and entry["reason"] == "Gym now sends a seed (reviewed)"
    assert main(["compare", str(base), str(cand), "--acks", str(acks)]) == 0


def test_ack_on_a_clean_comparison_writes_nothing(tmp_path, capsys):
    base = stored_run(tmp_path, "a", "0.4.0", [record("mcqa:accepted", "PASS")])
    cand = stored_run(tmp_path, "b", "0.4.0", [record("mcqa:accepted", "PASS")])
    assert main(["ack", str(base), str(cand), "--acks", str(tmp_path / "acks")]) == 0
    assert "nothing to acknowledge" in capsys.readouterr().out
    assert not (tmp_path / "acks").exists()
    assert main(["ack", str(cand), "--acks", str(tmp_path / "acks")]) == 2  # no comparison stored in it


def test_malformed_ack_file_is_a_usage_error(tmp_path, capsys):
    base, cand = _bump(tmp_path)
    acks = tmp_path / "acks"
    acks.mkdir()
    (acks / "bad.toml").write_text("[baseline]\nname = 1\n")
    assert main(["compare", str(base), str(cand), "--acks", str(acks)]) == 2
    assert "bad.toml: not a gymgate acknowledgement file" in capsys.readouterr().err


def _run(tmp_path, pin, params):
    made = [record(p, "PASS", observed=observation(params=params)) for p in ("mcqa:accepted", "mcqa:rejected")]
    return stored_run(tmp_path, f"run-{pin}", pin, made)


def _review(acks, base, cand, reason):
    assert main(["ack", str(base), str(cand), "--acks", str(acks)]) == 0
    (written,) = [p for p in acks.glob("*.toml") if 'reason = ""' in p.read_text()]
    if reason:
        written.write_text(written.read_text().replace('reason = ""', f'reason = "{reason}"'))
    return written


def test_reviews_compose_along_a_chain_of_steps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    """0.4.0 -> 0.7.0 with no review of its own is judged against the reviewed steps 0.4.0 -> 0.5.0 -> 0.7.0: a
    change carried value by value through them is acknowledged (and says by which steps), anything else is not."""
    acks = tmp_path / "acks"
    old, mid = _run(tmp_path, "0.4.0", {}), _run(tmp_path, "0.5.0", {"seed": 0})
    new = _run(tmp_path, "0.7.0", {"seed": 1})
    _review(acks, old, mid, "Gym 0.5.0 sends a seed")
    second = _review(acks, mid, new, "")

    # One step not yet reviewed: the chain covers nothing, and says which entry lacks its reason.
    comparison = compare_runs(old, new, Reviews([acks]))
    assert {p.category for p in comparison.paths} == {"changed"}
    assert [a.ref for a in comparison.acks.refused] == ["acks/0.5.0-to-0.7.0.toml change 1"]

    second.write_text(second.read_text().replace('reason = ""', 'reason = "Gym 0.7.0 seeds from the attempt"'))
    comparison = compare_runs(old, new, Reviews([acks]))
    assert {p.category for p in comparison.paths} == {"same-pass"} and comparison.exit_code == 0
    (change,) = comparison.paths[0].changes
    assert change.ack == "0.4.0 → 0.5.0: Gym 0.5.0 sends a seed | 0.5.0 → 0.7.0: Gym 0.7.0 seeds from the attempt"
    assert change.ack_file == "acks/0.4.0-to-0.5.0.toml change 1 + acks/0.5.0-to-0.7.0.toml change 1"
    assert main(["compare", str(old), str(new), "--acks", str(acks)]) == 0
    assert "0.5.0 → 0.7.0: Gym 0.7.0 seeds from the attempt" in (new / "report.md").read_text()

    # A value the chain does not carry (seed 2 is not what the last step reviewed) stays a change.
    other = stored_run(
        tmp_path, "run-other", "0.7.0", [record("mcqa:accepted", "PASS", observed=observation(params={"seed": 2}))]
    )
    assert {p.category for p in compare_runs(old, other, Reviews([acks])).paths} == {"changed", "unjudged"}
    # A review of the pair itself is applied first and the chain covers the rest: an empty one changes nothing...
    (acks / "0.4.0-to-0.7.0.toml").write_text(
        '[baseline]\nname = "0.4.0"\ndigest = "d-0.4.0"\n[candidate]\nname = "0.7.0"\ndigest = "d-0.7.0"\n'
    )
    assert {p.category for p in compare_runs(old, new, Reviews([acks])).paths} == {"same-pass"}
    # ...and what the chain cannot carry is reviewed there once, the chain's own reviews still standing.
    params = {"seed": 1, "top_k": 2}
    made = [record(p, "PASS", observed=observation(params=params)) for p in ("mcqa:accepted", "mcqa:rejected")]
    twice = stored_run(tmp_path, "run-0.7.0-top-k", "0.7.0", made)
    assert {p.category for p in compare_runs(old, twice, Reviews([acks])).paths} == {"changed"}
    own = _review(acks, old, twice, "0.7.0 samples with top_k 2 (reviewed for this bump alone)")
    entries = tomllib.loads(own.read_text())["change"]
    assert [e["field"] for e in entries] == ["requests.policy.*.body.top_k"]  # the seed: carried by the chain
    judged = compare_runs(old, twice, Reviews([acks]))
    assert {p.category for p in judged.paths} == {"same-pass"} and judged.exit_code == 0


def test_a_clean_step_is_written_so_chains_link_through_it(tmp_path):
    """0.4.0 -> 0.5.0 changed nothing: `gymgate ack` still records the reviewed step, and a change that first
    appears in the next step composes through it."""
    acks = tmp_path / "acks"
    old, mid = _run(tmp_path, "0.4.0", {}), _run(tmp_path, "0.5.0", {})
    new = _run(tmp_path, "0.7.0", {"seed": 1})
    assert main(["ack", str(old), str(mid), "--acks", str(acks)]) == 0
    step = acks / "0.4.0-to-0.5.0.toml"
    assert step.is_file() and tomllib.loads(step.read_text()).get("change", []) == []
    assert {p.category for p in compare_runs(old, new, Reviews([acks])).paths} == {
        "changed"
    }  # 0.5.0 -> 0.7.0 unreviewed
    _review(acks, mid, new, "Gym 0.7.0 sends a seed")
    comparison = compare_runs(old, new, Reviews([acks]))
    assert {p.category for p in comparison.paths} == {"same-pass"}
    assert comparison.paths[0].changes[0].ack == "0.5.0 → 0.7.0: Gym 0.7.0 sends a seed"


def test_a_change_reviewed_on_the_accepted_path_covers_its_fault_paths_and_nothing_else(tmp_path):
    """A fault path runs the accepted case again: the same change (field and exact values) reviewed on
    `mcqa:accepted` is covered on `mcqa:fault.*`, directly and along a chain; not on `mcqa:rejected`, and not a
    change only the fault path shows."""
    acks = tmp_path / "acks"
    paths = ("mcqa:accepted", "mcqa:rejected", "mcqa:fault.policy_500_once")

    def run(pin, seed, handled="absorbed"):
        made = []
        for p in paths:
            observed = observation(params={} if seed is None else {"seed": seed})
            if "fault." in p:
                observed["fault"] = {"handled": handled}
            made.append(record(p, "PASS", observed=observed))
        return stored_run(tmp_path, f"run-{pin}-{handled}", pin, made)

    old, mid, new = run("0.4.0", None), run("0.5.0", 0), run("0.7.0", 1)
    for base, cand, reason in ((old, mid, "Gym 0.5.0 sends a seed"), (mid, new, "Gym 0.7.0 seeds from the attempt")):
        written = _review(acks, base, cand, reason)
        text = written.read_text()
        written.write_text(
            text.replace('    "mcqa:fault.policy_500_once",\n', "").replace('    "mcqa:rejected",\n', "")
        )
    direct = {p.path: p.category for p in compare_runs(old, mid, Reviews([acks])).paths}
    assert direct == {
        "mcqa:accepted": "same-pass",
        "mcqa:rejected": "changed",
        "mcqa:fault.policy_500_once": "same-pass",
    }
    chained = {p.path: p.category for p in compare_runs(old, new, Reviews([acks])).paths}
    assert chained["mcqa:fault.policy_500_once"] == "same-pass" and chained["mcqa:rejected"] == "changed"
    handled = {
        p.path: p.category for p in compare_runs(old, run("0.5.0", 0, "reported by /run"), Reviews([acks])).paths
    }
    assert handled["mcqa:fault.policy_500_once"] == "changed"  # how Gym handled the fault: reviewed on its own path


def test_a_pairs_own_review_is_a_step_of_longer_chains_without_hiding_the_steps_it_skips(tmp_path):
    """0.5.0 -> 0.7.0 reviewed on its own (what the steps could not carry) and through 0.6.0: a bump from 0.4.0
    takes each change from whichever chain carries it."""
    acks = tmp_path / "acks"
    old, mid = _run(tmp_path, "0.4.0", {}), _run(tmp_path, "0.5.0", {"seed": 0})
    late, new = _run(tmp_path, "0.6.0", {"seed": 1}), _run(tmp_path, "0.7.0", {"seed": 1, "top_k": 2})
    _review(acks, old, mid, "0.5.0 sends a seed")
    _review(acks, mid, late, "0.6.0 seeds from the attempt")
    _review(acks, late, new, "0.7.0 sends top_k")
    # The pair 0.5.0 -> 0.7.0 reviewed on its own with nothing left open: a step with no entries, a shortcut.
    assert main(["ack", str(mid), str(new), "--acks", str(acks)]) == 0
    assert tomllib.loads((acks / "0.5.0-to-0.7.0.toml").read_text()).get("change", []) == []
    judged = compare_runs(old, new, Reviews([acks]))
    assert {p.category for p in judged.paths} == {"same-pass"} and judged.exit_code == 0


def test_a_list_of_scalars_is_one_leaf_a_list_of_objects_is_walked_and_types_count():
    observed = {
        "requests": {"policy": [{"body": {"temperature": 1.0, "seed": 7}}]},
        "result": {"reward": 1, "ids": [3, 1, 4, True, None, "x", 1.5], "output": [{"text": "a"}]},
    }
    same = {
        "result": {"output": [{"text": "a"}], "ids": [3, 1, 4, True, None, "x", 1.5], "reward": 1},
        "requests": {"policy": [{"body": {"seed": 7, "temperature": 1.0}}]},
    }
    assert diff(observed, same) == []
    for retyped in (1.0, True):
        other = {**observed, "result": {**observed["result"], "reward": retyped}}
        assert [c.field for c in diff(observed, other)] == ["result.reward"]
    other = {**observed, "result": {**observed["result"], "ids": [3, 1, 5, True, None, "x", 1.5]}}
    assert [c.field for c in diff(observed, other)] == ["result.ids"]  # token ids: one leaf, the whole list
    other = {**observed, "result": {**observed["result"], "output": [{"text": "b"}]}}
    assert [c.field for c in diff(observed, other)] == ["result.output.0.text"]  # objects: walked into


def test_a_step_that_reviews_one_value_going_two_ways_carries_either():
    """One release pair reviewed twice for the same value (the judge failure reported in the row, or rejected under
    an RL that rejects such rows): a chain follows whichever entry reaches the candidate's value."""
    from pathlib import Path

    from gymgate.compare.acks import Ack, Step, _carried
    from gymgate.compare.observation import Change, value_digest

    def entry(file: str, index: int, before: str, after: str) -> Ack:
        match = f"fault.handled: {value_digest(before)} -> {value_digest(after)}"
        return Ack(Path(file), index, "fault.handled", ["e:fault.x"], match, "reviewed")

    first = Step(
        Path("a-to-b.toml"),
        "a",
        "b",
        ("a", "b"),
        [entry("a-to-b.toml", 1, "run", "row"), entry("a-to-b.toml", 2, "run", "rejected")],
    )
    second = Step(Path("b-to-c.toml"), "b", "c", ("b", "c"), [])  # left the value alone
    for after, used in (("row", 1), ("rejected", 2)):
        carried = _carried([first, second], "e:fault.x", Change("fault.handled", "run", after, CONTRACT))
        assert carried is not None and [ack.index for _, ack in carried] == [used]
    assert _carried([first, second], "e:fault.x", Change("fault.handled", "run", "lost", CONTRACT)) is None
