"""The independent checks, by fault injection: each expected value comes from the pinned row or the case, never
from the run, so a Gym that changes what the model sees, leaks an RL override into a judge, or routes a row to
another agent fails them; the faithful version passes."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from gymgate.acceptance import checks
from gymgate.acceptance.expected import UnsupportedInput, first_turn_messages
from gymgate.cases.case import load_case
from gymgate.cases.environments import load_environments
from gymgate.consumer.rollout import GenerationConfig
from gymgate.endpoint.server import JUDGE, POLICY, Exchange
from gymgate.endpoint.tokenizer import build_tokenizer, encode, render
from gymgate.runfolder import PathRecord

TOKENIZER = build_tokenizer()
CONFIG = GenerationConfig(max_new_tokens=64, temperature=0.7, top_p=0.95)
# A row shaped like single_step_tool_use's: a history with reasoning and an earlier assistant answer.
ROW = {
    "responses_create_params": {
        "input": [
            {"role": "system", "content": "You are an agent.", "type": "message"},
            {"role": "user", "content": "Hello", "type": "message"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
            {"role": "user", "content": "Go on", "type": "message"},
        ]
    }
}
# What a faithful Gym sends for it (chat shape, with its own extra keys).
SENT = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi", "reasoning": "think", "reasoning_content": "think", "tool_calls": []},
    {"role": "user", "content": "Go on"},
]


def _result() -> PathRecord:
    return PathRecord(path="mcqa:accepted", env="mcqa", mode="accepted", gym={})


def _policy(messages, **body) -> Exchange:
    return Exchange(env="mcqa", route="chat", body={"messages": messages, **body}, kind=POLICY, turn=0)


def _processed(messages) -> dict:
    ids = encode(TOKENIZER, render(TOKENIZER, messages, None, generation_prompt=True))
    return {"message_log": [{"role": "user", "token_ids": np.array(ids, dtype=np.int64)}]}


def _failed(result: PathRecord) -> list[tuple[str, str]]:
    return [(f.kind, f.field.split(" (")[0]) for f in result.failures]


def test_a_faithful_first_turn_passes():
    result = _result()
    checks.check_first_turn(result, ROW, [_policy(SENT)], _processed(SENT), TOKENIZER)
    assert result.failures == []


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m[0].update(content="Be brief. You are an agent."),  # instructions rewritten
        lambda m: m.pop(2),  # history message dropped
        lambda m: m[2].update(reasoning="", reasoning_content=""),  # reasoning stripped from the history
        lambda m: m[3].update(role="system"),  # role changed
    ],
)
def test_a_first_turn_that_differs_from_the_pinned_row_fails(mutate):
    sent = copy.deepcopy(SENT)
    mutate(sent)
    result = _result()
    # The tokens RL trains on follow what Gym sent: both the messages and the first-turn prompt ids fail.
    checks.check_first_turn(result, ROW, [_policy(sent)], _processed(sent), TOKENIZER)
    assert _failed(result) == [
        ("first_turn", result.failures[0].field),
        ("tokens", "turn0.prompt_token_ids from the pinned row"),
    ]
    assert result.failures[0].field.startswith("message ")


def test_prompt_tokens_that_do_not_match_the_row_fail_even_if_the_messages_do():
    result = _result()
    wrong = _processed([*SENT[:-1], {"role": "user", "content": "Go on!"}])
    checks.check_first_turn(result, ROW, [_policy(SENT)], wrong, TOKENIZER)
    assert _failed(result) == [("tokens", "turn0.prompt_token_ids from the pinned row")]


def test_row_input_shapes():
    assert first_turn_messages({"input": "Q?"}) == [{"role": "user", "content": "Q?"}]
    assert first_turn_messages({"input": "Q?", "instructions": "Be kind."})[0] == {
        "role": "system",
        "content": "Be kind.",
    }
    calls = first_turn_messages(
        {
            "input": [
                {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c1"},
                {"type": "function_call_output", "call_id": "c1", "output": "42"},
            ]
        }
    )
    assert calls == [
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]
    with pytest.raises(UnsupportedInput):
        first_turn_messages({"input": [{"type": "web_search_call"}]})


@pytest.mark.parametrize(
    ("sampling", "leaks"),
    [({}, False), ({"temperature": 0.0}, False), ({"temperature": 0.7}, True), ({"top_p": 0.95}, True)],
)
def test_a_judge_request_with_either_rl_override_fails(sampling, leaks):
    (env,) = load_environments(["equivalence_llm_judge"])
    case = load_case(env)
    script = case.script("accepted")
    judge = Exchange(env=env.name, route="chat", body={"messages": [], **sampling}, kind=JUDGE, turn=0)
    row = {"responses_create_params": {"max_output_tokens": 64}}
    result = _result()
    checks.check_requests(result, case, script, [judge], row, {"responses_create_params": {}}, CONFIG)
    assert ("judge request carries an RL override" in [f.field for f in result.failures]) is leaks


def test_routing_is_checked_against_the_agent_gym_reports():
    (env,) = load_environments(["mcqa"])
    case = load_case(env)
    script = case.script("accepted")
    policy = [_policy([])]
    for reported, ok in (
        ({"type": "responses_api_agents", "name": env.agent}, True),
        ({"name": "another_agent"}, False),
        (None, False),  # Gym reported no agent at all
    ):
        result = _result()
        checks.check_routing(result, case, script, policy, reported)
        assert (not any(f.kind == "routing" for f in result.failures)) is ok, reported


@pytest.mark.parametrize(
    ("marker", "value"),
    [
        ("_ng_failure_class", "judge_failed"),  # 0.5.0's judge failsafe: reward 0.0, which a rejected path expects
        ("failure_reason", "judge call raised"),
        ("failure_kind", "judge_failed"),
        ("mask_sample", True),
    ],
)
def test_a_result_gym_marks_as_failed_never_passes_whatever_its_reward(marker, value):
    record = PathRecord.stub("equivalence_llm_judge:rejected", "ERROR", "")
    checks.check_gym_failure(record, {"reward": 0.0, marker: value})
    assert [(f.kind, f.field, f.actual) for f in record.failures] == [("gym_failure", marker, value)]


def test_a_result_with_its_failure_fields_unset_passes():
    record = PathRecord.stub("mcqa:rejected", "ERROR", "")
    checks.check_gym_failure(
        record, {"reward": 0.0, "failure_kind": None, "failure_reason": None, "mask_sample": False}
    )
    checks.check_gym_failure(record, {"reward": 0.0})  # a Gym from before the fields existed
    assert record.failures == []


@pytest.mark.parametrize(
    ("row_params", "sent", "fails"),
    [
        ({"tool_choice": "auto", "parallel_tool_calls": True}, {}, False),  # no tools: neutral values may be dropped
        (
            {"tool_choice": "auto", "parallel_tool_calls": True},
            {"tool_choice": "auto", "parallel_tool_calls": True},
            False,
        ),
        ({"tool_choice": "auto"}, {"tool_choice": "required"}, True),  # sent, but not as the row says
        ({"tool_choice": "required"}, {}, True),  # a choice that means something, dropped
        ({"tool_choice": "auto", "tools": [{"type": "function", "name": "f"}]}, {}, True),  # with tools it matters
    ],
)
def test_passed_through_tool_parameters_must_arrive_when_they_mean_something(row_params, sent, fails):
    (env,) = load_environments(["mcqa"])
    case = load_case(env)
    script = case.script("accepted")
    body = {"messages": [], "temperature": 0.7, "top_p": 0.95, "max_tokens": 64, "logprobs": True}
    body |= {"return_tokens_as_token_ids": True, **sent}
    policy = Exchange(env=env.name, route="chat", body=body, kind=POLICY, turn=0)
    row = {"responses_create_params": {"max_output_tokens": 64, **row_params}}
    result = _result()
    checks.check_requests(result, case, script, [policy], row, copy.deepcopy(row), CONFIG)
    tool_failures = [f.field for f in result.failures if "tool_choice" in f.field or "parallel" in f.field]
    assert bool(tool_failures) is fails, result.failures
