"""The declarative cases: complete, hashed, and read exactly (drift is reported with both hashes)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from gymgate.cases.case import MODES, InputDrift, load_case, lookup, read_row, transform_row
from gymgate.cases.named import load_environments


def test_every_environment_has_both_modes_with_a_reward_expectation():
    envs = load_environments()
    assert len(envs) == 7
    for env in envs:
        case = load_case(env)
        assert set(case.modes) == set(MODES)
        assert case.modes["accepted"].expect["reward"] == 1.0
        assert case.modes["rejected"].expect["reward"] == 0.0
        assert len(case.sha256) == 64
        for mode in MODES:
            script = case.script(mode)
            assert script.turns and script.path_id == f"{env.name}:{mode}"
        assert bool(case.modes["accepted"].judge) == bool(env.judge_markers)


def _gym_root(tmp_path, case, line: str):
    target = tmp_path / case.file
    target.parent.mkdir(parents=True)
    target.write_text(line)
    return tmp_path


def test_row_bytes_are_checked_against_the_case(tmp_path):
    (env,) = load_environments(["mcqa"])
    case = load_case(env)
    row = {"responses_create_params": {"input": "q", "metadata": None}, "expected_answer": "B"}
    line = json.dumps(row) + "\n"
    with pytest.raises(InputDrift) as info:
        read_row(case, _gym_root(tmp_path, case, line))
    assert info.value.expected == case.sha256
    assert info.value.actual == hashlib.sha256(line.encode()).hexdigest()
    assert case.sha256 in str(info.value) and info.value.actual in str(info.value)


def test_transforms_are_exactly_the_declared_ones():
    (single,) = load_environments(["single_step_tool_use_with_argument_comparison"])
    (mcqa,) = load_environments(["mcqa"])
    raw = json.dumps({"responses_create_params": {"input": "q", "metadata": None, "tool_choice": "auto"}}) + "\n"
    row = transform_row(load_case(single), raw)
    # Sent as RL sends it: the row's parameters untouched, its nulls included.
    assert row["responses_create_params"] == {"input": "q", "metadata": None, "tool_choice": "auto"}
    assert row["agent_ref"] == {"type": "responses_api_agents", "name": single.agent}
    row = transform_row(load_case(mcqa), raw)
    assert row["responses_create_params"]["metadata"] is None
    assert row["agent_ref"]["name"] == "mcqa_simple_agent"


def test_no_case_changes_what_rl_sends_of_the_row():
    """A transform that rewrites the row's parameters hides what Gym does with RL's real input: unknown, refused."""
    assert {t for env in load_environments(None) for t in load_case(env).transforms} <= {"add_agent_ref"}
    (single,) = load_environments(["single_step_tool_use_with_argument_comparison"])
    case = load_case(single)
    with pytest.raises(ValueError, match="unknown transform 'drop_null_create_params'"):
        transform_row(replace(case, transforms=("drop_null_create_params",)), '{"responses_create_params": {}}')


def test_dotted_lookup():
    data = {"a": [{"b": 1}], "c": None}
    assert lookup(data, "a.0.b") == 1 and lookup(data, "c") is None
    with pytest.raises(KeyError, match="no 'x'"):
        lookup(data, "a.0.x")


def test_a_case_gives_one_judge_reply_per_judge_call_and_can_leave_its_servers_recordings_alone():
    """math_with_judge with its judge on: the judge is asked twice for an equal verdict (one reply each, in order)
    and once for a different one; its server's recordings were made with the judge off, so it replays none."""
    from gymgate.cases.environments import all_environments
    from gymgate.kinds.plan import recordings_of

    env = next(e for e in all_environments() if e.name == "math_with_judge_judge_on")
    case = load_case(env)
    assert len(case.script("accepted").judge_verdicts) == 2 and len(case.script("rejected").judge_verdicts) == 1
    assert all("[[A=B]]" in v for v in case.script("accepted").judge_verdicts)
    assert not env.replays and env.overrides
    assert recordings_of(None, [env], "0.7.0") == []  # never reads the Gym's files for it
    shipped = next(e for e in all_environments() if e.name == "math_with_judge")
    assert shipped.replays and load_case(shipped).script("accepted").judge_verdicts == ()
