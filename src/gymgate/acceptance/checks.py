"""Exact checks of one completed path against its expected values (a case's, or a recording's: gymgate.paths)
and the endpoint's record of what it saw."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

from gymgate.acceptance.expected import JUDGE_PARAMS, first_turn_messages, judge_sampling, seen
from gymgate.cases.case import NULL, RETURNED, lookup
from gymgate.consumer.batch import HISTOGRAM
from gymgate.consumer.rollout import GenerationConfig
from gymgate.endpoint import POLICY_MODEL
from gymgate.endpoint.script import Script, logprobs
from gymgate.endpoint.server import JUDGE, POLICY, Exchange
from gymgate.endpoint.tokenizer import encode, render
from gymgate.paths.spec import PathSpec
from gymgate.recordings import fidelity
from gymgate.rl.profile import RECIPE, TRAINED_MARKERS, Profile, value_at
from gymgate.rl.profile import load as load_profile
from gymgate.runfolder import PathRecord
from gymgate.text import excerpt, first_difference

MISSING = "<missing>"
# Responses-API create params that reach the chat request under the same name.
PASSED_THROUGH = ("tool_choice", "parallel_tool_calls")
# With no tools these values tell the model nothing, and chat servers reject them without tools (Gym drops them
# from 0.6.0): a row without tools only needs any *other* tool_choice to arrive.
NEUTRAL_WITHOUT_TOOLS = {"tool_choice": ("auto", "none"), "parallel_tool_calls": (True, False)}


def row_extra_body(params: dict[str, Any]) -> dict[str, Any]:
    """What a row asks Gym's model server to add to each of its model requests: `metadata.extra_body`, a JSON
    object in a string (per-sample stop strings, for one: image_tools' rows stop at `</tool_call>`), which Gym's
    vLLM model server merges into the chat request under the request's own keys. Unreadable: nothing to hold."""
    raw = (params.get("metadata") or {}).get("extra_body") if isinstance(params.get("metadata"), dict) else None
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def contains(expected: Any, actual: Any) -> bool:
    """Every key and value of `expected` is in `actual` (Gym may add defaults; it must not drop or change)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(contains(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return expected == actual


def _expected(value: Any) -> Any:
    return None if value == NULL else value


# Fields by which Gym says a rollout failed while still answering with a row: 0.5.0's judge failsafe turns a
# failed judge call into reward 0.0 with `_ng_failure_class` (an RL framework would train on that zero); 0.6.0 adds
# `failure_reason`, 0.7.0 `failure_kind`. `_ng_failure_class` fails a path whatever its reward and whatever RL does
# with it (a rejected path's expected 0.0 is no excuse); the diagnostic two fail it unless the run's RL profile
# trains on a verdict that carries them (Gym#2608's "degraded but valid": rl/profiles/, [markers]) and the sample is
# not masked — then they are on record (`PathRecord.rl`) and in every comparison, not a failure.
FAILURE_CLASS = "_ng_failure_class"
FAILURE_MARKERS = (FAILURE_CLASS, "failure_kind", "failure_reason")
# `mask_sample` (true: drop the sample from the loss): Gym 0.7.0's verify response carries it at the top level, RL
# reads `instance_config.mask_sample` (RL#4061: the top level first); the profile says which decides.
MASK_RL_READS, MASK_TOP_LEVEL = "instance_config.mask_sample", "mask_sample"
MASK_FIELDS = {MASK_RL_READS: MASK_RL_READS, MASK_TOP_LEVEL: f"{MASK_TOP_LEVEL} (top level)"}  # location -> field


def failure_markers(full: dict[str, Any]) -> dict[str, Any]:
    """The failure markers a row carries, set (what tells RL the sample is not a real one)."""
    found = {k: full[k] for k in FAILURE_MARKERS if full.get(k) not in (None, False)}
    if value_at(full, MASK_RL_READS):
        found[MASK_RL_READS] = True
    if full.get(MASK_TOP_LEVEL) not in (None, False):
        found[MASK_TOP_LEVEL] = full[MASK_TOP_LEVEL]
    return found


def check_gym_failure(
    result: PathRecord,
    full: dict[str, Any],
    recorded: dict[str, Any] | None = None,
    verdicts: dict[str, tuple[str, ...]] | None = None,
    of_original: bool = False,
    profile: Profile | None = None,
) -> None:
    """`recorded`: a replay's recorded verifier fields (None for a hand-written path); `verdicts`: the failure fields
    a reviewed entry says the environment's verifier sets on its verdicts, with the values that are verdicts
    (fidelity.verdict_markers). Such a value, exactly as recorded, is the verdict, held by check_recording. A
    diagnostic marker on a verdict the profile's RL trains on (not masked) is on record, not a failure; any other set
    marker fails, saying what the profile's RL does with it. `of_original`: the path's verdict is held to its
    original's elsewhere (a variant of a replay), so a verdict value need not be the recorded one — its disagreement
    is the variant's finding. `profile`: which RL (default: the newest modelled)."""
    profile = profile or load_profile()
    masked_at = profile.masked_at(full)
    trained: dict[str, Any] = {}
    for key in FAILURE_MARKERS:
        if full.get(key) in (None, False):
            continue
        allowed = (verdicts or {}).get(key, ()) if key in fidelity.DIAGNOSTIC_FIELDS else ()  # never _ng_failure_class
        if recorded is not None and full[key] in allowed and (of_original or recorded.get(key) == full[key]):
            continue
        if key in profile.trains_on_markers and not masked_at:
            trained[key] = full[key]
            continue
        result.fail("gym_failure", key, None, f"{full[key]!r}: {rl_does(key, masked_at, profile)}")
    if trained:
        result.rl[TRAINED_MARKERS] = trained
    for location, field_name in MASK_FIELDS.items():
        value = value_at(full, location)
        if value in (None, False):
            continue
        if location == masked_at:
            result.fail("gym_failure", field_name, False, f"{value!r}: RL masks this sample out of the loss")
        else:
            seen = f"RL masks it by {masked_at}" if masked_at else f"RL reads {profile.mask_read[0]} and trains on it"
            result.fail("gym_failure", field_name, False, f"{value!r}: {seen}")


def check_rl_reward(result: PathRecord, full: dict[str, Any], recipe: dict[str, Any] | None) -> None:
    """Under a training recipe (--rl-recipe): a penalty that changes Gym's reward changes what RL trains on — the path
    fails (`rl_reward`), naming the penalties; one that fires on a reward already 0.0 is on record only."""
    if recipe is None:
        return
    result.rl[RECIPE] = recipe
    if recipe["penalties"] and recipe["reward"] != full.get("reward"):
        result.fail(
            "rl_reward",
            f"{', '.join(recipe['penalties'])} ({recipe['recipe']})",
            full.get("reward"),
            f"{recipe['reward']}: the reward RL trains on under this recipe",
        )


def rl_does(key: str, masked_at: str, profile: Profile) -> str:
    """What the profile's RL does with a result carrying this failure marker (a failure's reason)."""
    if key == FAILURE_CLASS and profile.rejects_failure_class:
        return "RL rejects the result before reading its reward"
    if masked_at:
        return f"RL masks the sample ({masked_at})"
    return "RL reads no failure marker and trains on the reward"


def check_verifier(result: PathRecord, path: PathSpec, full: dict[str, Any]) -> None:
    result.reward = full.get("reward")
    result.result_fields = sorted(full)
    if path.recorded is not None:
        result.verifier = fidelity.comparable(full, path.recorded.fields)
        return  # a replay's reward and verifier fields are held to its recording (check_recording)
    for key, want in path.expect.items():
        want = _expected(want)
        try:
            got = lookup(full, key)
        except KeyError:
            got = MISSING
        result.verifier[key] = got
        if got != want:
            result.fail("reward" if key == "reward" else "verifier", key, want, got)


def _ok(exchanges: list[Exchange], kind: str) -> list[Exchange]:
    return sorted((e for e in exchanges if e.kind == kind and e.status == 200), key=lambda e: e.turn or 0)


def check_first_turn(
    result: PathRecord, row: dict[str, Any], exchanges: list[Exchange], processed: dict[str, Any], tokenizer: Any
) -> None:
    """The first policy request's messages, and the first-turn prompt tokens RL trains on, against what the pinned
    row (after the case's transforms) stands for: independent of everything Gym did in this run. The tools are held
    to the row by check_tool_schema; their rendering here is the request's own."""
    policy = _ok(exchanges, POLICY)
    if not policy:
        result.fail("first_turn", "first policy request", "present", MISSING)
        return
    want = first_turn_messages(row["responses_create_params"])
    got = [seen(m) for m in policy[0].body.get("messages") or []]
    for index in range(max(len(want), len(got))):
        a = want[index] if index < len(want) else MISSING
        b = got[index] if index < len(got) else MISSING
        if a != b:
            before, after = _message_excerpt(a, b)
            result.fail("first_turn", f"message {index} of the first request", before, after)
            break
    expected_ids = encode(tokenizer, render(tokenizer, want, policy[0].body.get("tools"), generation_prompt=True))
    log = processed["message_log"]
    trained = [int(t) for t in log[0]["token_ids"]] if log else []
    if trained != expected_ids:
        at = first_difference(expected_ids, trained)
        result.fail(
            "tokens",
            f"turn0.prompt_token_ids from the pinned row (first difference at {at})",
            {"len": len(expected_ids), "at": expected_ids[max(0, at - 4) : at + 4]},
            {"len": len(trained), "at": trained[max(0, at - 4) : at + 4]},
        )


def _message_excerpt(a: Any, b: Any) -> tuple[Any, Any]:
    """Two messages, long texts cut to the neighbourhood of their first difference."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a, b
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if not keys:
        return a, b
    key = keys[0]
    left, right = a.get(key, MISSING), b.get(key, MISSING)
    if isinstance(left, str) and isinstance(right, str):
        left, right = excerpt(left, right, context=30)
    return {"role": a.get("role"), key: left}, {"role": b.get("role"), key: right}


def check_tokens(result: PathRecord, script: Script, exchanges: list[Exchange], processed: dict[str, Any]) -> None:
    log = processed["message_log"]
    policy = _ok(exchanges, POLICY)
    turns = len(log) // 2
    if turns != len(policy):
        result.fail("tokens", "trainable_turns", len(policy), turns)
    summary = []
    for index, exchange in enumerate(policy[:turns]):
        message = exchange.reply["choices"][0]["message"]
        want_prompt, want_gen = message["prompt_token_ids"], message["generation_token_ids"]
        got_prompt = [int(t) for m in log[: 2 * index + 1] for t in m["token_ids"]]
        got_gen = log[2 * index + 1]["token_ids"].tolist()
        got_lp = log[2 * index + 1]["generation_logprobs"]
        want_lp = np.asarray(logprobs(script, POLICY, exchange.turn, len(want_gen)), dtype=np.float32)
        if got_prompt != want_prompt:
            result.fail("tokens", f"turn{index}.prompt_token_ids", digest(want_prompt), digest(got_prompt))
        if got_gen != want_gen:
            result.fail("tokens", f"turn{index}.generation_token_ids", want_gen[:12], got_gen[:12])
        if got_lp.shape != want_lp.shape or not np.array_equal(got_lp, want_lp):
            result.fail("tokens", f"turn{index}.generation_logprobs", want_lp[:6].tolist(), got_lp[:6].tolist())
        summary.append(
            {
                "prompt_len": len(got_prompt),
                "generation_len": len(got_gen),
                "prompt": digest(got_prompt),
                "generation": digest(got_gen),
                "logprobs": digest(got_lp.tolist()),
            }
        )
    wire = processed.get("wire", {})
    result.tokens = {
        "turns": summary,
        "wire_types": wire.get("generation_token_id_types"),
        "trainable_item_keys": wire.get("trainable_item_keys"),
    }


def _chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function", tool)
    return {"name": fn.get("name"), "description": fn.get("description"), "parameters": fn.get("parameters")}


def check_request_contract(
    result: PathRecord,
    path: PathSpec,
    script: Script,
    exchanges: list[Exchange],
    sent_row: dict[str, Any],
    full: dict[str, Any],
    config: GenerationConfig,
    judge_config: dict[str, Any] | None = None,
    top_logprobs: bool = True,
    judge_calls_scripted: bool = True,
) -> None:
    """Every request the model received against what RL and the case say it must carry: the RL overrides and
    flags on policy requests, exactly the judge configuration's sampling (and the same flags) on judge requests,
    the row's parameters passed through, and the row's create params back in Gym's result.
    `judge_config`: the environment config's judge create params (acceptance/expected.judge_params);
    `top_logprobs`: whether this Gym asks for `top_logprobs: 0` (gym_compat.sends_top_logprobs);
    `judge_calls_scripted`: the judge is asked once per scripted reply (False: the path's kind holds the count)."""
    params = sent_row["responses_create_params"]
    policy, judge = _ok(exchanges, POLICY), _ok(exchanges, JUDGE)
    flags = rl_flags(top_logprobs)
    for exchange in exchanges:
        if exchange.status != 200:
            result.fail(
                "request_contract", f"{exchange.route} request rejected by the endpoint", "accepted", exchange.violation
            )
    want = {
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": params["max_output_tokens"],
        **flags,
    }
    for exchange in policy:
        for key, value in want.items():
            if exchange.body.get(key, MISSING) != value:
                result.fail(
                    "request_contract", f"policy turn {exchange.turn}: {key}", value, exchange.body.get(key, MISSING)
                )
        for key in PASSED_THROUGH:
            neutral = not params.get("tools") and params.get(key) in NEUTRAL_WITHOUT_TOOLS[key]
            if neutral and key not in exchange.body:
                continue
            if key in params and exchange.body.get(key, MISSING) != params[key]:
                result.fail(
                    "request_contract",
                    f"policy turn {exchange.turn}: {key}",
                    params[key],
                    exchange.body.get(key, MISSING),
                )
        for key, value in row_extra_body(params).items():  # the request's own keys win the merge: not held here
            if key not in want and key != "messages" and exchange.body.get(key, MISSING) != value:
                result.fail(
                    "request_contract",
                    f"policy turn {exchange.turn}: {key} (the row's metadata.extra_body)",
                    value,
                    exchange.body.get(key, MISSING),
                )
    if judge and judge_config is None:
        result.fail("request_contract", "judge configuration", f"{JUDGE_PARAMS} in the environment's config", MISSING)
    judge_want = {**judge_sampling(judge_config or {}, MISSING), **flags}
    for n, exchange in enumerate(judge):
        # Exactly the judge configuration's sampling: an RL override or a default slipped in is a leak.
        for key, value in judge_want.items():
            if exchange.body.get(key, MISSING) != value:
                result.fail("request_contract", f"judge request {n}: {key}", value, exchange.body.get(key, MISSING))
    expected_judges = len(script.judge_verdicts)
    # A replay's count is held to its recording (check_recording), a variant's to its original's (acceptance/variant).
    if len(judge) != expected_judges and judge_calls_scripted and not script.recorded:
        result.fail("request_contract", "judge requests", expected_judges, len(judge))
    echoed = full.get("responses_create_params") or {}
    for key, value in params.items():
        if not contains(value, echoed.get(key, MISSING)):
            result.fail("request_contract", f"responses_create_params.{key} after Gym", value, echoed.get(key, MISSING))
    result.request_contract = {
        "policy_keys": sorted({k for e in policy for k in e.body}),
        "judge_keys": sorted({k for e in judge for k in e.body}),
        "top_logprobs": sorted({json.dumps(e.body.get("top_logprobs", MISSING)) for e in policy}),
        "overrides": {k: params.get(k) for k in ("temperature", "top_p", "max_output_tokens")},
        "echoed_param_keys": sorted(echoed),
        "policy_requests": len(policy),
        "judge_requests": len(judge),
    }


def rl_flags(top_logprobs: bool) -> dict[str, Any]:
    """What every request through Gym's model server must carry for RL (NeMo RL's vLLM server is asked for token
    ids and logprobs, and no alternatives): the model name RL serves, the logprob and token-id flags, and
    `top_logprobs: 0` on a Gym that sends it (gym_compat.sends_top_logprobs: 0.4.0 on)."""
    flags: dict[str, Any] = {"model": POLICY_MODEL, "logprobs": True, "return_tokens_as_token_ids": True}
    if top_logprobs:
        flags["top_logprobs"] = 0
    return flags


def check_metadata(result: PathRecord, path: PathSpec, sent_row: dict[str, Any], full: dict[str, Any]) -> None:
    """The row's own fields against Gym's result: each the case declares returned must come back unchanged (the
    value RL fed, not what Gym echoed); every other field must be declared, with why it does not come back. A draft
    declares none yet: `gymgate case new` writes them from what came back."""
    if path.metadata is None:
        return
    for key, value in sent_row.items():
        if key in ("responses_create_params", "agent_ref"):
            continue  # held by check_request_contract and check_routing
        declared = path.metadata.get(key)
        if declared is None:
            result.fail("metadata", key, "declared in the case's [row.metadata]", "undeclared row field")
        elif declared == RETURNED and full.get(key, MISSING) != value:
            if path.recorded is not None and key in path.recorded.fields:
                continue  # a replay's: the recording holds the field (check_recording), where it can be classified
            result.fail("metadata", key, value, full.get(key, MISSING))


REWARD_STATS = ("mean", "median", "min", "max")  # of one path's one sample: each the sample's reward


def check_metrics(
    result: PathRecord, path: PathSpec, metrics: dict[str, Any], tables: dict[str, list[str]], full: dict[str, Any]
) -> None:
    """The RL-side metrics of the path's agent, as RL logs them: `{agent}/reward/*` from the case's expected
    reward (one sample: mean, median, min and max equal it, the sample stddev is NaN, the histogram holds the one
    reward; present whatever the reward, since RL logs them from any numeric reward), and the full-result table
    (one row per sample, the sample's result as JSON)."""
    want = path.expect.get("reward")
    agent = path.env.agent
    expected: dict[str, Any] = {f"{agent}/reward/{stat}": want for stat in REWARD_STATS}
    expected |= {f"{agent}/reward/stddev": math.nan, f"{agent}/reward/{HISTOGRAM}": [want]}
    # A wrong reward already failed check_verifier; the metrics then follow it and only need to exist.
    rewarded = full.get("reward") == want
    for key, value in expected.items():
        got = metrics.get(key, MISSING)
        if got is MISSING or (rewarded and not _same_metric(got, value)):
            result.fail("metrics", key, recordable(value), recordable(got))
    table = tables.get(agent, [])
    if len(table) != 1 or json.loads(table[0]) != full:
        result.fail("metrics", f"{agent}/full_result", "one row: the sample's full result", f"{len(table)} row(s)")


def _same_metric(got: Any, want: Any) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return bool(got == want)


def recordable(value: Any) -> Any:
    """A metric as a record can hold it (JSON has no NaN)."""
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def check_routing(result: PathRecord, path: PathSpec, script: Script, exchanges: list[Exchange], reported: Any) -> None:
    """`reported`: the agent Gym itself says served the row (its result's agent_ref, else the agent_ref of the row
    Gym yields with the result), taken before the consumer writes the rows' agent_ref onto the results."""
    strays = sorted({e.env for e in exchanges if e.env != path.env.name})
    if strays:
        result.fail("routing", "model calls from other environments' Gyms", [], strays)
    agent = (reported or {}).get("name") if isinstance(reported, dict) else reported
    if agent != path.env.agent:
        result.fail("routing", "agent_ref.name reported by Gym", path.env.agent, agent)
    policy = _ok(exchanges, POLICY)
    if len(policy) != len(script.turns):
        result.fail("routing", "scripted turns consumed", len(script.turns), len(policy))


def check_tool_schema(
    result: PathRecord, sent_row: dict[str, Any], exchanges: list[Exchange], full: dict[str, Any]
) -> None:
    row_tools = [_chat_tool(t) for t in sent_row["responses_create_params"].get("tools") or []]
    strict = set()
    for exchange in _ok(exchanges, POLICY):
        sent = exchange.body.get("tools") or []
        strict.update("strict" in t.get("function", t) for t in sent)
        got = [_chat_tool(t) for t in sent]
        if got != row_tools:
            names = ([t["name"] for t in row_tools], [t["name"] for t in got])
            result.fail("tool_schema", f"tools sent at policy turn {exchange.turn}", names[0], names[1])
    result.tools = {"count": len(row_tools), "digest": digest(row_tools), "strict_sent": sorted(strict)}
    check_tool_outputs(result, exchanges, full)


def check_tool_output(result: PathRecord, path: PathSpec, full: dict[str, Any]) -> None:
    """Gym's tool outputs against the golden values the case pins for this behaviour: whether each output is
    right, not only whether it reached the model (check_tool_outputs)."""
    golden = path.tool_outputs
    if golden is None:
        return  # a draft: `gymgate case new` pins what the tools returned
    got = tool_outputs(full)
    want = list(golden)
    if got != want:
        result.fail("tool_output", "tool outputs (golden, from the case)", want, got)


def tool_outputs(full: dict[str, Any]) -> list[Any]:
    """Every tool output in Gym's result, in the order the tools ran."""
    output = (full.get("response") or {}).get("output") if isinstance(full, dict) else None
    return [i.get("output") for i in output or [] if isinstance(i, dict) and i.get("type") == "function_call_output"]


MODEL_ITEMS = ("message", "function_call", "reasoning")  # output items a model call produced


def _answered_tool_outputs(full: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool outputs the model was asked to go on from: each followed by something a later model call produced.
    An agent that stops after running the tool (its step limit, a terminal action) never sends the last output back."""
    items = [i for i in (full.get("response") or {}).get("output", []) if isinstance(i, dict)]
    last_model = max((n for n, i in enumerate(items) if i.get("type") in MODEL_ITEMS), default=-1)
    return [i for n, i in enumerate(items) if i.get("type") == "function_call_output" and n < last_model]


def check_tool_outputs(result: PathRecord, exchanges: list[Exchange], full: dict[str, Any]) -> None:
    """Every tool output Gym produced and went on from must come back to the model, verbatim, in the next turn's
    history."""
    outputs = _answered_tool_outputs(full)
    later = _ok(exchanges, POLICY)[1:]
    for item in outputs:
        seen = [
            m
            for e in later
            for m in e.body.get("messages", [])
            if m.get("role") == "tool" and m.get("tool_call_id") == item.get("call_id")
        ]
        if not seen or any(m.get("content") != item.get("output") for m in seen):
            result.fail(
                "tool_output",
                f"tool output {item.get('call_id')} in the next request",
                item.get("output"),
                [m.get("content") for m in seen] or MISSING,
            )


def check_continuity(result: PathRecord, exchanges: list[Exchange]) -> None:
    """Multi-turn continuity on the wire: each later request echoes the previous turn's own token ids."""
    policy = _ok(exchanges, POLICY)
    for previous, current in zip(policy, policy[1:], strict=False):
        reply = previous.reply["choices"][0]["message"]
        assistants = [m for m in current.body.get("messages", []) if m.get("role") == "assistant"]
        last = assistants[-1] if assistants else {}
        for key in ("prompt_token_ids", "generation_token_ids"):
            got = [int(t) for t in last.get(key) or []]
            if got != reply[key]:
                result.fail("continuity", f"turn {current.turn} history {key}", digest(reply[key]), digest(got))


def check_recording(result: PathRecord, path: PathSpec, full: dict[str, Any], exchanges: list[Exchange]) -> None:
    """A replay against its recording, Gym's own oracle: the reward and every verifier field the recording holds,
    leaf by leaf, and every tool output Gym returned, in order (recordings/volatile.toml's leaves aside). What does
    not reproduce fails the path (kind `recording`) unless cases/recordings/fidelity.toml classifies exactly it."""
    if path.recorded is None:
        return
    replayed_tools = tool_outputs(full)
    judged = (len(path.script.judge_verdicts), len(_ok(exchanges, JUDGE)))
    found = fidelity.divergences(path.recorded.fields, full, path.recorded.tool_outputs, replayed_tools, judged)
    if not found:
        result.fidelity = {"reproduces": True}
        return
    entry = fidelity.classification(path.id, str(result.gym.get("version", "")), found)
    result.fidelity = {"reproduces": False, "divergences": [d.to_json() for d in found[:20]], "count": len(found)}
    if entry is not None:
        result.fidelity["classified"] = entry.to_json()
        result.fidelity["masks"] = list(entry.masks)
        return
    for divergence in found:
        result.fail("recording", divergence.field, divergence.recorded, divergence.replayed)
