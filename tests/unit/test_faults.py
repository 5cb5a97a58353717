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
    faults, limit = catalogue()
    assert faults and limit >= 3
    for fault in faults:
        assert PathId.of("mcqa", fault.path_name).mode == fault.path_name
        assert not (fault.absorb and fault.permanent)


def test_how_many_attempts_fail():
    assert [Fault("f", "policy", 0, "http_500", 2).fails(a) for a in range(3)] == [True, True, False]
    assert all(Fault("f", "policy", 0, "http_500", EVERY).fails(a) for a in range(50))


def test_a_fault_applies_only_to_a_call_the_case_makes():
    judge = Fault("j", "judge", 0, "http_500", 1)
    second = Fault("s", "policy", 1, "http_500", 1)
    assert not judge.applies(ONE_TURN) and judge.applies(JUDGED)
    assert not second.applies(ONE_TURN) and second.applies(JUDGED)


@pytest.mark.parametrize(
    "entry, problem",
    [
        ({"kind": "http_418"}, "kind"),
        ({"caller": "user"}, "caller"),
        ({"times": 0}, "times"),
        ({"times": EVERY, "absorb": True}, "absorb"),
        ({"name": "bad-name"}, "name"),
    ],
)
def test_a_bad_fault_is_refused_naming_what_is_wrong(tmp_path, entry, problem):
    fault = {"name": "f", "caller": "policy", "call": 0, "kind": "http_500", "times": 1, **entry}
    lines = [f"{k} = {v!r}".replace("'", '"').replace("True", "true") for k, v in fault.items()]
    path = tmp_path / "faults.toml"
    path.write_text("max_attempts = 10\n[[fault]]\n" + "\n".join(lines) + "\n")
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
