"""What an environment's paths exercise (gymgate.coverage, gymgate.listing): every path of a form or a fault counted
in its family, every family named, and why a family has none said from the plan itself."""

from __future__ import annotations

import pytest

from gymgate import coverage
from gymgate.cases.named import load_environments
from gymgate.kinds.plan import plan
from gymgate.listing import planned
from gymgate.variants.forms import CATALOGUE, catalogue, families


def test_every_form_and_fault_path_counts_in_one_family():
    names = coverage.family_names()
    assert names[:5] == ["the answer", "programs", "judge replies", "tool sessions", "rows"]
    assert names[5:] == ["faults: first call", "faults: later turn", "faults: judge"]
    kinds = {k for v in families().values() for k in v}
    assert {f.kind for f in catalogue()[0]} <= kinds
    got = coverage.count(
        "mcqa",
        [
            "mcqa:accepted",
            "mcqa:form.boxed_text.accepted",
            "mcqa:form.read_first.accepted",
            "mcqa:form.row_typed_content.rec.3f2a9c1b0d",
            "mcqa:fault.policy_500_once",
            "mcqa:fault.second_turn_502_a_while",
            "mcqa:fault.judge_500_every",
        ],
    ).counts
    assert got == {
        "the answer": 1,
        "programs": 0,
        "judge replies": 0,
        "tool sessions": 1,
        "rows": 1,
        "faults: first call": 1,
        "faults: later turn": 1,
        "faults: judge": 1,
    }


def test_a_family_an_environment_does_not_exercise_says_why():
    envs = {e.name: e for e in load_environments(["mcqa", "workplace_assistant", "equivalence_llm_judge"])}
    paths = plan(list(envs.values()), selections={"fault": "all", "variant": "all"})
    found = {name: planned(env, [p for p in paths if p.id.env == name]) for name, env in envs.items()}
    assert found["workplace_assistant"].counts["tool sessions"] > 0
    assert found["workplace_assistant"].counts["faults: later turn"] > 0
    assert found["mcqa"].why_not["tool sessions"] == "no [session] table in its case"
    assert found["mcqa"].why_not["faults: later turn"] == "its accepted answer is one turn"
    assert found["mcqa"].why_not["judge replies"].startswith("no judge reply")
    assert (
        found["equivalence_llm_judge"].counts["judge replies"] > 0
        and found["equivalence_llm_judge"].counts["faults: judge"] > 0
    )
    assert "programs" in found["mcqa"].why_not and "the answer" not in found["mcqa"].why_not


def test_a_form_kind_outside_every_family_is_refused(tmp_path):
    text = CATALOGUE.read_text()  # the committed catalogue, one family short
    broken = tmp_path / "forms.toml"
    broken.write_text(text.replace('"rows" = ["row shape"]', ""))
    with pytest.raises(ValueError, match="row shape"):
        families(broken)


def test_a_case_that_turns_a_servers_judge_on_is_counted_as_itself():
    envs = {e.name: e for e in load_environments(["math_with_judge", "math_with_judge_judge_on"])}
    paths = plan(list(envs.values()), selections={"fault": "all", "variant": "all"})
    found = {name: planned(env, [p for p in paths if p.id.env == name]) for name, env in envs.items()}
    assert found["math_with_judge_judge_on"].counts["judge replies"] > 0
    assert found["math_with_judge_judge_on"].counts["faults: judge"] > 0
    assert found["math_with_judge"].why_not["faults: judge"] == "its accepted answer asks no judge"
