"""The independent checks, by fault injection: each expected value comes from the pinned row or the case, never
from the run, so a Gym that changes what the model sees, leaks an RL override into a judge, or routes a row to
another agent fails them; the faithful version passes."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest

from gymgate.acceptance import checks
from gymgate.acceptance.expected import UnsupportedInput, first_turn_messages
from gymgate.cases.case import RETURNED
from gymgate.cases.named import load_environments
from gymgate.consumer.rollout import GenerationConfig
from gymgate.endpoint.server import JUDGE, POLICY, Exchange
from gymgate.endpoint.tokenizer import build_tokenizer, encode, render
from gymgate.kinds.handwritten import case_paths
from gymgate.paths.spec import Recorded
from gymgate.recordings import fidelity
from gymgate.rl.profile import TRAINED_MARKERS
from gymgate.rl.profile import load as load_profile
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


def _accepted(env):
    """The environment's accepted path (gymgate.paths): the value every check reads its expectations from."""
    return case_paths(env)[0]


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


FLAGS = {"model": "gymgate-policy", "logprobs": True, "return_tokens_as_token_ids": True, "top_logprobs": 0}


@pytest.mark.parametrize(
    ("config", "sampling", "fails"),
    [
        ({"input": []}, {}, []),  # the config sets no sampling: none may arrive
        ({"input": []}, {"temperature": 0.7}, ["judge request 0: temperature"]),  # an RL override leaked
        ({"input": []}, {"top_p": 1.0}, ["judge request 0: top_p"]),  # a default slipped in
        ({"input": [], "temperature": 0.0}, {"temperature": 0.0}, []),  # exactly the config's value
        ({"input": [], "temperature": 0.0}, {}, ["judge request 0: temperature"]),  # the config's value dropped
        ({"input": [], "max_output_tokens": 512}, {"max_tokens": 256}, ["judge request 0: max_tokens"]),
        (None, {}, ["judge configuration"]),  # judge requests, but the config declares no judge: cannot derive
    ],
)
def test_judge_requests_carry_exactly_the_judge_configurations_sampling(config, sampling, fails):
    (env,) = load_environments(["equivalence_llm_judge"])
    case = _accepted(env)
    script = case.script
    judge = Exchange(env=env.name, route="chat", body={"messages": [], **FLAGS, **sampling}, kind=JUDGE, turn=0)
    row = {"responses_create_params": {"max_output_tokens": 64}}
    result = _result()
    checks.check_request_contract(result, case, script, [judge], row, {"responses_create_params": {}}, CONFIG, config)
    assert [f.field for f in result.failures if f.field.startswith("judge")] == fails


def test_the_judge_configuration_is_read_from_the_environments_own_config(tmp_path):
    from gymgate.acceptance.expected import judge_params

    config = tmp_path / "c.yaml"
    config.write_text(
        "e:\n  resources_servers:\n    s:\n      judge_responses_create_params:\n        input: []\n"
        "        temperature: 0.2\n"
    )
    assert judge_params(config) == {"input": [], "temperature": 0.2}
    config.write_text("e:\n  resources_servers:\n    s:\n      other: 1\n")
    assert judge_params(config) is None


@pytest.mark.parametrize("key", ["model", "logprobs", "return_tokens_as_token_ids", "top_logprobs"])
def test_every_policy_and_judge_request_carries_the_flags_rl_needs(key):
    (env,) = load_environments(["equivalence_llm_judge"])
    case = _accepted(env)
    script = case.script
    body = {"messages": [], "temperature": 0.7, "top_p": 0.95, "max_tokens": 64, **FLAGS}
    broken = {k: v for k, v in body.items() if k != key}
    row = {"responses_create_params": {"max_output_tokens": 64}}
    for kind, sent in ((POLICY, broken), (JUDGE, {k: v for k, v in broken.items() if k in FLAGS or k == "messages"})):
        result = _result()
        exchanges = [Exchange(env=env.name, route="chat", body=sent, kind=kind, turn=0)]
        if kind == POLICY:  # the case's one judge request, faithful
            exchanges.append(Exchange(env=env.name, route="chat", body={"messages": [], **FLAGS}, kind=JUDGE, turn=0))
        checks.check_request_contract(result, case, script, exchanges, row, copy.deepcopy(row), CONFIG, {"input": []})
        assert [f.field for f in result.failures if f.field.endswith(key)] != [], (kind, key)
    # A Gym from before 0.4.0 never sends top_logprobs: that is its rule, not a failure.
    result = _result()
    policy = Exchange(
        env=env.name, route="chat", body={k: v for k, v in body.items() if k != "top_logprobs"}, kind=POLICY, turn=0
    )
    judge = Exchange(
        env=env.name,
        route="chat",
        body={"messages": [], **{k: v for k, v in FLAGS.items() if k != "top_logprobs"}},
        kind=JUDGE,
        turn=0,
    )
    checks.check_request_contract(
        result, case, script, [policy, judge], row, copy.deepcopy(row), CONFIG, {"input": []}, False
    )
    assert result.failures == []


def test_the_rows_metadata_must_come_back_unchanged_and_every_field_be_declared():
    (env,) = load_environments(["mcqa"])
    case = _accepted(env)
    row = {
        "responses_create_params": {},
        "agent_ref": {},
        "expected_answer": "B",
        "options": [],
        "uuid": "u",
        "grading_mode": "strict",
    }
    result = _result()
    checks.check_metadata(result, case, row, {"expected_answer": "B"})
    assert result.failures == []  # options, uuid, grading_mode are declared as not returned, with why
    checks.check_metadata(result, case, row, {"expected_answer": "b"})
    checks.check_metadata(result, case, {**row, "difficulty": 3}, {"expected_answer": "B"})
    assert _failed(result) == [("metadata", "expected_answer"), ("metadata", "difficulty")]


def test_a_replays_row_field_that_does_not_come_back_is_reported_once_by_the_recording_check():
    (env,) = load_environments(["mcqa"])
    recorded = Recorded("0.7.0", "f", 0, "s", {"reward": 1.0, "problem_id": "p1"}, ())
    replay = dataclasses.replace(_accepted(env), recorded=recorded, metadata={"problem_id": RETURNED})
    result = _result()
    checks.check_metadata(result, replay, {"responses_create_params": {}, "problem_id": "p1"}, {"reward": 1.0})
    assert result.failures == []  # the recording holds it: a divergence there, classifiable
    checks.check_recording(result, replay, {"reward": 1.0}, [])
    assert _failed(result) == [("recording", "problem_id")]


def test_rl_side_metrics_equal_the_paths_expected_values():
    (env,) = load_environments(["mcqa"])
    case = _accepted(env)
    agent = case.env.agent
    full = {"reward": 1.0, "expected_answer": "B"}
    good = {f"{agent}/reward/{s}": 1.0 for s in ("mean", "median", "min", "max")}
    # RL's values for one sample: the sample stddev is NaN, the histogram the one reward.
    good |= {f"{agent}/reward/stddev": math.nan, f"{agent}/reward/histogram": [1.0]}
    tables = {agent: [__import__("json").dumps(full)]}
    result = _result()
    checks.check_metrics(result, case, good, tables, full)
    assert result.failures == []
    checks.check_metrics(result, case, {k: v for k, v in good.items() if not k.endswith("mean")}, tables, full)
    checks.check_metrics(result, case, good, {agent: []}, full)
    checks.check_metrics(result, case, good | {f"{agent}/reward/max": 0.0}, tables, full)  # a metric alone wrong
    # The population stddev gymgate once computed (0.0) is a value RL never produces for one sample.
    checks.check_metrics(result, case, good | {f"{agent}/reward/stddev": 0.0}, tables, full)
    assert _failed(result) == [
        ("metrics", f"{agent}/reward/mean"),
        ("metrics", f"{agent}/full_result"),
        ("metrics", f"{agent}/reward/max"),
        ("metrics", f"{agent}/reward/stddev"),
    ]
    assert result.failures[-1].expected == "NaN"  # a record holds JSON: NaN is written as a string
    # A wrong reward is the verifier check's finding: the metrics that follow it are not failed twice, but they
    # must exist (a reward RL cannot read leaves none).
    wrong = {**full, "reward": 0.0}
    zero = dict.fromkeys(good, 0.0) | {f"{agent}/reward/stddev": math.nan}
    result = _result()
    checks.check_metrics(result, case, zero, {agent: [__import__("json").dumps(wrong)]}, wrong)
    assert result.failures == []
    text = {**full, "reward": "1.0"}
    checks.check_metrics(result, case, {}, {agent: [__import__("json").dumps(text)]}, text)
    assert {f.field for f in result.failures} == {
        f"{agent}/reward/{s}" for s in ("mean", "median", "min", "max", "stddev", "histogram")
    }


def test_tool_outputs_equal_the_golden_values_of_the_case():
    (env,) = load_environments(["workplace_assistant"])
    case = _accepted(env)
    result = PathRecord(path="workplace_assistant:accepted", env=env.name, mode="accepted", gym={})
    output = {"type": "function_call_output", "call_id": "c", "output": '{"output":"Email replied successfully."}'}
    checks.check_tool_output(result, case, {"response": {"output": [output]}})
    assert result.failures == []
    checks.check_tool_output(result, case, {"response": {"output": [{**output, "output": "Email replied."}]}})
    checks.check_tool_output(result, case, {"response": {"output": []}})
    assert _failed(result) == [("tool_output", "tool outputs"), ("tool_output", "tool outputs")]


def test_routing_is_checked_against_the_agent_gym_reports():
    (env,) = load_environments(["mcqa"])
    case = _accepted(env)
    script = case.script
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
    ],
)
def test_a_result_gym_marks_as_failed_never_passes_whatever_its_reward(marker, value):
    """A masked sample, or one RL rejects or trains on although Gym failed to judge it (_ng_failure_class), fails on
    every profile, saying what that RL does with it."""
    for name, masked, says in (
        ("7ea279ab", {"instance_config": {"mask_sample": True}}, "RL masks the sample (instance_config.mask_sample)"),
        ("pr4061", {"mask_sample": True}, "RL masks the sample (mask_sample)"),
    ):
        record = PathRecord.stub("equivalence_llm_judge:rejected", "ERROR", "")
        checks.check_gym_failure(record, {"reward": 0.0, marker: value, **masked}, profile=load_profile(name))
        assert [(f.kind, f.field) for f in record.failures][0] == ("gym_failure", marker)
        if marker != checks.FAILURE_CLASS:
            assert record.failures[0].actual == f"{value!r}: {says}"


def test_the_failure_class_fails_saying_whether_the_profiles_rl_rejects_it_or_trains_on_it():
    for name, says in (
        ("7ea279ab", "RL reads no failure marker and trains on the reward"),
        ("pr4061", "RL rejects the result before reading its reward"),
    ):
        record = PathRecord.stub("equivalence_llm_judge:rejected", "ERROR", "")
        checks.check_gym_failure(
            record, {"reward": 0.0, "_ng_failure_class": "judge_failed"}, profile=load_profile(name)
        )
        assert [(f.field, f.actual) for f in record.failures] == [("_ng_failure_class", f"'judge_failed': {says}")]


@pytest.mark.parametrize("name", ["7ea279ab", "pr4061"])
def test_a_diagnostic_marker_on_a_verdict_rl_trains_on_is_on_record_not_a_failure(name):
    """Gym#2608's "degraded but valid": failure_kind / failure_reason on a sound, unmasked verdict. The profile's RL
    trains on it, so the path is not failed (image_tools marks every verdict so); the record and the report say it."""
    record = PathRecord.stub("image_tools:accepted", "ERROR", "")
    full = {"reward": 1.0, "failure_kind": "degraded", "failure_reason": "none", "mask_sample": False}
    checks.check_gym_failure(record, full, profile=load_profile(name))
    assert record.failures == []
    assert record.rl[TRAINED_MARKERS] == {"failure_kind": "degraded", "failure_reason": "none"}


@pytest.mark.parametrize(
    ("result", "fields", "says"),
    [
        # Where RL reads it: RL drops the sample from the loss.
        ({"instance_config": {"mask_sample": True}}, ["instance_config.mask_sample"], "RL masks this sample"),
        # Gym 0.7.0's top-level field: RL does not read it and would train on the sample; the report says so.
        ({"mask_sample": True}, ["mask_sample (top level)"], "RL reads instance_config.mask_sample and trains on it"),
        (
            {"mask_sample": True, "instance_config": {"mask_sample": True}},
            ["instance_config.mask_sample", "mask_sample (top level)"],
            "RL masks it by instance_config.mask_sample",
        ),
        ({"mask_sample": False, "instance_config": {"mask_sample": False}}, [], ""),
        ({"instance_config": None}, [], ""),
    ],
)
def test_mask_sample_is_judged_where_rl_reads_it_and_a_moved_one_is_named(result, fields, says):
    record = PathRecord.stub("mcqa:accepted", "ERROR", "")
    checks.check_gym_failure(record, {"reward": 1.0, **result}, profile=load_profile("7ea279ab"))
    assert [f.field for f in record.failures] == fields
    assert all(says in str(f.actual) for f in record.failures[-1:])


VERDICTS = {"failure_reason": ("none", "argument_below_threshold")}
# An RL that does not train through Gym's diagnostic markers (none modelled does): where the reviewed verdict markers
# (cases/recordings/fidelity.toml) decide.
MASKS_ON_MARKERS = dataclasses.replace(load_profile("7ea279ab"), trains_on_markers=())


@pytest.mark.parametrize(
    ("recorded", "verdicts", "fails"),
    [
        ({"failure_reason": "argument_below_threshold"}, VERDICTS, []),  # a reviewed verdict, as recorded
        ({"failure_reason": "none"}, VERDICTS, ["failure_reason"]),  # another value than the recorded one
        ({"reward": 0.0}, VERDICTS, ["failure_reason"]),  # the recording never said so
        ({"failure_reason": "argument_below_threshold"}, {}, ["failure_reason"]),  # nobody reviewed it as a verdict
        ({"failure_reason": "argument_below_threshold"}, {"failure_reason": ("none",)}, ["failure_reason"]),
        (None, VERDICTS, ["failure_reason"]),  # a hand-written path: any reason fails
    ],
)
def test_a_replay_may_carry_a_reviewed_verdict_marker_its_recording_carries_and_no_other(recorded, verdicts, fails):
    record = PathRecord.stub("image_tools:rec.1", "ERROR", "")
    full = {"reward": 0.0, "failure_reason": "argument_below_threshold"}
    checks.check_gym_failure(record, full, recorded, verdicts, profile=MASKS_ON_MARKERS)
    assert [f.field for f in record.failures] == fails


def test_a_variant_of_a_replay_carries_any_reviewed_verdict_value_its_own_verdict_holds():
    """A variant's verdict is held to its original's by the variant check (a disagreement is its finding there): a
    reviewed verdict value other than the recorded one is not also a gym_failure; a value nobody reviewed still is."""
    record = PathRecord.stub("text_to_sql:form.judge_label_lower.rec.1", "ERROR", "")
    recorded = {"failure_reason": "none"}
    checks.check_gym_failure(
        record,
        {"reward": 0.0, "failure_reason": "argument_below_threshold"},
        recorded,
        VERDICTS,
        True,
        MASKS_ON_MARKERS,
    )
    assert record.failures == []
    checks.check_gym_failure(
        record, {"reward": 0.0, "failure_reason": "unknown_error"}, recorded, VERDICTS, True, MASKS_ON_MARKERS
    )
    assert [f.field for f in record.failures] == ["failure_reason"]


def test_the_reviewed_verdict_markers_are_read_per_environment():
    assert "argument_below_threshold" in fidelity.verdict_markers("image_tools")["failure_reason"]
    assert "unknown_error" not in fidelity.verdict_markers("image_tools")["failure_reason"]
    assert fidelity.verdict_markers("mcqa") == {}


def test_a_replay_never_passes_with_what_marks_an_infrastructure_failure_even_if_recorded():
    record = PathRecord.stub("m:rec.1", "ERROR", "")
    marked = {"_ng_failure_class": "judge_failed", "mask_sample": True}
    everything = {k: ("judge_failed", "True") for k in ("_ng_failure_class", "failure_kind", "mask_sample")}
    checks.check_gym_failure(record, {"reward": 0.0, **marked}, {"reward": 0.0, **marked}, everything)
    assert [f.field for f in record.failures] == ["_ng_failure_class", "mask_sample (top level)"]


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
    case = _accepted(env)
    script = case.script
    body = {"messages": [], "temperature": 0.7, "top_p": 0.95, "max_tokens": 64, **FLAGS, **sent}
    policy = Exchange(env=env.name, route="chat", body=body, kind=POLICY, turn=0)
    row = {"responses_create_params": {"max_output_tokens": 64, **row_params}}
    result = _result()
    checks.check_request_contract(result, case, script, [policy], row, copy.deepcopy(row), CONFIG)
    tool_failures = [f.field for f in result.failures if "tool_choice" in f.field or "parallel" in f.field]
    assert bool(tool_failures) is fails, result.failures


EXTRA = {"metadata": {"extra_body": '{"stop": ["</tool_call>"], "include_stop_str_in_output": true}'}}


@pytest.mark.parametrize(
    ("row_params", "sent", "fails"),
    [
        (EXTRA, {"stop": ["</tool_call>"], "include_stop_str_in_output": True}, False),
        (EXTRA, {"include_stop_str_in_output": True}, True),  # the row's stop string never reached the model
        (EXTRA, {}, True),
        ({"metadata": {"extra_body": "not json"}}, {}, False),  # nothing Gym could merge either
        ({"metadata": None}, {}, False),
    ],
)
def test_what_a_row_adds_to_every_model_request_must_reach_the_model(row_params, sent, fails):
    (env,) = load_environments(["mcqa"])
    case = _accepted(env)
    body = {"messages": [], "temperature": 0.7, "top_p": 0.95, "max_tokens": 64, **FLAGS, **sent}
    policy = Exchange(env=env.name, route="chat", body=body, kind=POLICY, turn=0)
    row = {"responses_create_params": {"max_output_tokens": 64, **row_params}}
    result = _result()
    checks.check_request_contract(result, case, case.script, [policy], row, copy.deepcopy(row), CONFIG)
    assert bool([f for f in result.failures if "extra_body" in f.field]) is fails, result.failures


def _tool_result(*types: str) -> dict:
    items = {
        "function_call": {"type": "function_call", "call_id": "c1", "name": "click", "arguments": "{}"},
        "function_call_output": {"type": "function_call_output", "call_id": "c1", "output": '{"x": 1}'},
        "message": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    }
    return {"response": {"output": [items[t] for t in types]}}


@pytest.mark.parametrize(
    ("items", "sent_back", "fails"),
    [
        (("function_call", "function_call_output", "message"), '{"x": 1}', False),
        (("function_call", "function_call_output", "message"), None, True),  # the model went on without it
        (("function_call", "function_call_output", "message"), '{"x": 2}', True),  # not verbatim
        (("function_call", "function_call_output"), None, False),  # the agent stopped after the tool: nothing to send
    ],
)
def test_a_tool_output_must_reach_the_model_when_the_model_goes_on_from_it(items, sent_back, fails):
    first = _policy([{"role": "user", "content": "go"}])
    history = [{"role": "user", "content": "go"}]
    if sent_back is not None:
        history.append({"role": "tool", "tool_call_id": "c1", "content": sent_back})
    exchanges = [first, *([_policy(history)] if "message" in items else [])]
    result = _result()
    checks.check_tool_outputs(result, exchanges, _tool_result(*items))
    assert bool(result.failures) is fails, result.failures


def test_under_the_newer_profile_a_top_level_mask_is_where_rl_masks():
    record = PathRecord.stub("mcqa:accepted", "ERROR", "")
    checks.check_gym_failure(record, {"reward": 1.0, "mask_sample": True}, profile=load_profile("pr4061"))
    assert [(f.field, f.actual) for f in record.failures] == [
        ("mask_sample (top level)", "True: RL masks this sample out of the loss")
    ]


def test_a_recipe_penalty_that_changes_gyms_reward_fails_the_path_and_one_on_a_zero_is_on_record():
    record = PathRecord.stub("mcqa:accepted", "ERROR", "")
    fired = {"recipe": "nemotron-3-ultra", "penalties": ["penalize_empty_final_answer"], "reward": 0.0}
    checks.check_rl_reward(record, {"reward": 1.0}, fired)
    assert [(f.kind, f.field, f.expected) for f in record.failures] == [
        ("rl_reward", "penalize_empty_final_answer (nemotron-3-ultra)", 1.0)
    ]
    rejected = PathRecord.stub("mcqa:rejected", "ERROR", "")
    checks.check_rl_reward(rejected, {"reward": 0.0}, fired)
    assert rejected.failures == [] and rejected.rl["recipe"] == fired
    untouched = PathRecord.stub("mcqa:accepted", "ERROR", "")
    checks.check_rl_reward(untouched, {"reward": 1.0}, None)  # no recipe asked for
    assert untouched.failures == [] and untouched.rl == {}
