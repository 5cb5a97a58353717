"""The fault catalogue (gymgate/faults/faults.toml): read and checked once, and planned as fault paths only when
asked, only on calls a case makes."""

from __future__ import annotations

import pytest

from gymgate.cases.named import load_environments
from gymgate.endpoint.script import Script, Turn
from gymgate.faults import ALL, DEFAULT, NONE
from gymgate.faults.catalogue import EVERY, Fault, catalogue
from gymgate.kinds.plan import plan
from gymgate.pathid import PathId

ONE_TURN = Script("c", "accepted", (Turn(content="a"),))
JUDGED = Script("c", "accepted", (Turn(content="a"), Turn(content="b")), judge_verdicts=("[[A=B]]",))


def test_the_catalogue_reads_and_every_fault_names_a_path():
    found = catalogue()
    faults, limit = found.faults, found.max_attempts
    assert faults and limit >= 3
    for fault in faults:
        assert PathId.of("mcqa", fault.path_name).mode == fault.path_name
        assert not (fault.absorb and fault.permanent)


def test_every_cell_of_the_matrix_runs_or_says_why_not():
    """calls × kinds × times: each cell a fault that runs (reviewed, or generated for --faults all), or listed as not
    run with why; a reviewed cell keeps its name, a generated one is named for its cell."""
    found = catalogue()
    names = [f.name for f in found.faults] + [u.name for u in found.unrun]
    assert len(names) == len(set(names)) == 3 * 13 * 3
    by_name = {f.name: f for f in found.faults}
    assert by_name["policy_500_once"].reviewed and by_name["policy_500_once"].absorb
    generated = by_name["second_turn_502_a_while"]
    assert (generated.caller, generated.call, generated.kind, generated.times) == ("policy", 1, "http_502", 3)
    assert not generated.reviewed and not generated.default and not generated.absorb
    assert "bad gateway" in generated.why and "later turn" in generated.why
    assert by_name["judge_429_retry_after_once"].retry_after == 1 and by_name["policy_slow_once"].delay_s == 3.0
    once = by_name["judge_502_once"]  # reviewed by a glob: transient on every call, absorbed by every release
    assert once.reviewed and once.absorb and not once.default and "proxy" in once.why
    assert all(f.reviewed for f in found.faults if f.default)  # the default set is reviewed cells only
    unrun = {u.name: u.why for u in found.unrun}
    assert "policy_refused_once" in unrun and "judge_stall_every" in unrun and "policy_slow_every" in unrun
    assert "policy_stall_once" in by_name and not by_name["policy_stall_once"].default


def test_how_many_attempts_fail():
    assert [Fault("f", "policy", 0, "http_500", 2).fails(a) for a in range(3)] == [True, True, False]
    assert all(Fault("f", "policy", 0, "http_500", EVERY).fails(a) for a in range(50))


def test_a_fault_applies_only_to_a_call_the_case_makes():
    judge = Fault("j", "judge", 0, "http_500", 1)
    second = Fault("s", "policy", 1, "http_500", 1)
    assert not judge.applies(ONE_TURN) and judge.applies(JUDGED)
    assert not second.applies(ONE_TURN) and second.applies(JUDGED)


MATRIX = """max_attempts = 10
[[matrix.call]]
name = "policy"
caller = "policy"
call = 0
[[matrix.kind]]
name = "500"
kind = "http_500"
[[matrix.kind]]
name = "refused"
kind = "refused"
[[matrix.times]]
name = "once"
times = 1
[[matrix.times]]
name = "every"
times = "every"
[[unrun]]
cells = ["*_refused_*"]
why = "cannot be made here"
"""


@pytest.mark.parametrize(
    "extra, problem",
    [
        ('[[fault]]\nname = "policy_418_once"\n', "no cell"),
        ('[[fault]]\nname = "policy_500_once"\ncaller = "user"\n', "key `caller`"),
        ('[[fault]]\nname = "policy_500_every"\nabsorb = true\n', "absorb"),
        ('[[fault]]\nname = "policy_refused_once"\n', "both reviewed and listed"),
        ('[[unrun]]\ncells = ["judge_*"]\nwhy = "x"\n', "must match cells"),
        ('[[fault]]\nname = "policy_500_once"\ncells = ["*_once"]\n', "names one cell"),
        ('[[fault]]\ncells = ["judge_*"]\n', "match no cell"),
        ('[[unrun]]\ncells = ["policy_500_once"]\n', "say why"),
        ("", None),
    ],
)
def test_a_bad_catalogue_is_refused_naming_what_is_wrong(tmp_path, extra, problem):
    path = tmp_path / "faults.toml"
    path.write_text(MATRIX + extra)
    if problem is None:
        assert [f.name for f in catalogue(path).faults] == ["policy_500_once", "policy_500_every"]
        partly = tmp_path / "partly.toml"  # a kind the endpoint cannot make must be unrun in every cell
        partly.write_text(MATRIX.replace('cells = ["*_refused_*"]', 'cells = ["*_refused_every"]'))
        with pytest.raises(ValueError, match="kind 'refused'"):
            catalogue(partly)
        return
    with pytest.raises(ValueError, match=problem):
        catalogue(path)


def test_fault_paths_are_planned_as_selected_after_each_case():
    envs = load_environments(["mcqa", "workplace_assistant"])
    without = [p.id for p in plan(envs, selections={"fault": NONE})]
    with_faults = [p.id for p in plan(envs, selections={"fault": DEFAULT})]
    every = [p.id for p in plan(envs, selections={"fault": ALL})]
    assert without == ["mcqa:accepted", "mcqa:rejected", "workplace_assistant:accepted", "workplace_assistant:rejected"]
    assert set(without) < set(with_faults) < set(every)
    assert with_faults[:3] == ["mcqa:accepted", "mcqa:rejected", "mcqa:fault.policy_500_once"]
    # a fault kept out of the default set (it hangs known releases) runs only with `all`
    assert "mcqa:fault.policy_reset_every" in every and "mcqa:fault.policy_reset_every" not in with_faults
    with pytest.raises(ValueError, match="expected one of none, default, all"):
        plan(envs, selections={"fault": "some"})
    faulted = [p for p in plan(envs, selections={"fault": DEFAULT}) if p.kind == "fault"]
    assert {p.id.env for p in faulted} == {"mcqa", "workplace_assistant"}
    assert all(p.script.mode == "accepted" for p in faulted)  # the accepted case, run again with one call failing
    # workplace_assistant's case has two policy turns: its second turn's fault applies; mcqa's has one
    assert "workplace_assistant:fault.second_turn_500_once" in with_faults
    assert "mcqa:fault.second_turn_500_once" not in with_faults
