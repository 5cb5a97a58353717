"""A recorded rollout as a path: the model says, turn by turn, what the recording says it said (reasoning, text,
function calls with their recorded arguments), a judge says what the recorded judge said, and the path must come
to what Gym recorded: the reward, every verifier field, every tool output."""

from __future__ import annotations

from typing import Any

from gymgate.cases.case import RETURNED
from gymgate.cases.environments import Environment
from gymgate.endpoint.script import Script, ToolCall, Turn
from gymgate.pathid import PathId
from gymgate.paths.spec import PathSpec, Recorded, RowSource
from gymgate.recordings.read import BOOKKEEPING, Recording

TRANSFORMS = ("add_agent_ref",)  # what an RL dataset adds to a shipped row, as for a case's row
NOT_VERIFIER = ("response", "responses_create_params", *BOOKKEEPING)  # a recording's keys that are not Gym's verdict


def replay_path(env: Environment, recording: Recording) -> PathSpec:
    recorded = recording.recorded
    response = recorded.get("response") if isinstance(recorded.get("response"), dict) else {}
    items = [i for i in response.get("output") or [] if isinstance(i, dict)]
    fields = {k: v for k, v in recorded.items() if k not in NOT_VERIFIER}
    name = PathId.named(env.name, "recording", key=recording.key).mode
    marker = "" if env.judge_markers else judge_marker(recorded, recording.row)
    script = Script(
        env.name,
        name,
        model_turns(items),
        env.judge_markers or ((marker,) if marker else ()),
        judge_verdicts=tuple(judge_texts(recorded)),
        recorded=True,
        opening=first_user_text(recording.row) if env.judged and not env.judge_markers else "",
    )
    row = recording.row or {}
    unreplayable = recording.unreplayable or ("" if "reward" in recorded else "it records no reward")
    return PathSpec(
        id=PathId.of(env.name, name),
        env=env,
        script=script,
        row=RowSource(recording.row_file, recording.row_line, recording.row_sha256, TRANSFORMS, data=row),
        expect={"reward": recorded.get("reward")},
        tool_outputs=None,  # held to the recording's own, masked (acceptance/checks.check_recording)
        metadata={k: _returned(k, v, recorded) for k, v in row.items() if k not in ("responses_create_params",)},
        recorded=Recorded(
            gym=recording.gym,
            file=recording.file,
            line=recording.line,
            sha256=recording.sha256,
            fields=fields,
            tool_outputs=tuple(str(i.get("output")) for i in items if i.get("type") == "function_call_output"),
        ),
        cannot_run=unreplayable,
    )


def _returned(key: str, value: Any, recorded: dict[str, Any]) -> str:
    if key in recorded and recorded[key] == value:
        return RETURNED
    return "not returned: the recording's result does not carry it unchanged"


def model_turns(items: list[dict[str, Any]]) -> tuple[Turn, ...]:
    """The model's turns in a recorded response's output: everything the model produced up to what Gym put in
    between (the tool outputs it answered the calls with, or an environment's own message to the model, as a
    multi-turn environment sends one) is one turn (one model call)."""
    turns: list[Turn] = []
    reasoning: list[str] = []
    texts: list[str] = []
    calls: list[ToolCall] = []

    def close() -> None:
        if reasoning or texts or calls:
            turns.append(Turn("".join(texts), "\n".join(r for r in reasoning if r), tuple(calls)))
        reasoning.clear(), texts.clear(), calls.clear()

    for item in items:
        kind = item.get("type")
        if kind == "function_call_output" or (kind == "message" and item.get("role", "assistant") != "assistant"):
            close()
        elif kind == "reasoning":
            reasoning.append("\n".join(_texts(item.get("summary")) or _texts(item.get("content"))))
        elif kind == "message":
            texts.extend(_texts(item.get("content")))
        elif kind == "function_call":
            calls.append(ToolCall(str(item.get("name")), str(item.get("arguments"))))
    close()
    return tuple(turns)


def judge_exchanges(recorded: dict[str, Any]) -> list[dict[str, Any]]:
    """The judge exchanges a recording's verifier fields hold, in order: each a request (`responses_create_params`)
    with the judge's `response` (equivalence_llm_judge's `judge_evaluations[*]`, arena's `games[*]`,
    aegis_v4_safety's `judge_evaluation`, …)."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "responses_create_params" in value and "response" in value:
                found.append(value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for key, value in recorded.items():
        if key not in NOT_VERIFIER:
            walk(value)
    return found


# Where a recording keeps only what the judge answered, not its exchange: simpleqa's `judge_output`, inverse_if's
# `rubric_evaluations[*].judge_response` (one per rubric), finance_sec_search's `judge_text`.
JUDGE_TEXT_KEYS = ("judge_output", "judge_response", "judge_text")


def judge_texts(recorded: dict[str, Any]) -> list[str]:
    """What each recorded judge call answered, in order (where a recording keeps only the judge's texts, those, in
    the order the recording holds them)."""
    texts = []
    for exchange in judge_exchanges(recorded):
        response = exchange["response"]
        output = response.get("output") if isinstance(response, dict) else None
        texts.append(
            "".join(
                t
                for i in output or []
                if isinstance(i, dict) and i.get("type") == "message"
                for t in _texts(i.get("content"))
            )
        )
    if not texts:
        _kept_texts({k: v for k, v in recorded.items() if k not in NOT_VERIFIER}, texts)
    return texts


def _kept_texts(value: Any, texts: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in JUDGE_TEXT_KEYS and isinstance(item, str):
                texts.append(item)
            else:
                _kept_texts(item, texts)
    elif isinstance(value, list):
        for item in value:
            _kept_texts(item, texts)


def judge_marker(recorded: dict[str, Any], row: dict[str, Any] | None) -> str:
    """For an environment without declared judge_markers: the longest line (20 characters or more) every judge
    request the recording keeps carries and the row's own prompt does not — how the endpoint tells the judge's calls
    from the policy's (a judge that quotes the conversation carries the row's opening too). "" when the recording
    keeps no judge request."""
    common: set[str] | None = None
    for exchange in judge_exchanges(recorded):
        lines = {line.strip() for text in _asked(exchange["responses_create_params"]) for line in text.splitlines()}
        common = lines if common is None else common & lines
    asked = "\n".join(_asked((row or {}).get("responses_create_params")))
    found = sorted(line for line in common or () if len(line) >= 20 and line not in asked)
    return max(found, key=len) if found else ""


def _asked(params: Any) -> list[str]:
    """The texts of a request's instructions and input messages."""
    if not isinstance(params, dict):
        return []
    items = params.get("input")
    texts = [str(params.get("instructions") or "")]
    if isinstance(items, str):
        return [*texts, items]
    return [*texts, *("".join(_texts(i.get("content"))) for i in items or [] if isinstance(i, dict))]


def first_user_text(row: dict[str, Any] | None) -> str:
    """The text of a row's first user message: what every policy request of its rollout carries."""
    params = (row or {}).get("responses_create_params") or {}
    items = params.get("input")
    if isinstance(items, str):
        return items
    for item in items or []:
        if isinstance(item, dict) and item.get("role") == "user":
            return "".join(_texts(item.get("content")))
    return ""


def _texts(parts: Any) -> list[str]:
    if isinstance(parts, str):
        return [parts]
    return [str(p.get("text", "")) for p in parts or [] if isinstance(p, dict) and "text" in p]
