"""What the model must see on the first turn, derived from the SHA256-pinned row alone (after the case's declared
transforms), never from the run: the chat messages a Responses API request stands for, in the OpenAI semantics Gym
implements (instructions first as a system message; a string input is one user message; reasoning and function
calls fold into the assistant message they belong to; a function call's output is a tool message).

Comparing the first request against these makes the first-turn check independent of Gym's own conversion: a Gym
that rewrites the instructions, drops a message or reorders the history fails it on every version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gymgate.text import content_text


class UnsupportedInput(ValueError):
    """A row input item this derivation does not know: the case needs a person (gymgate's own limit, not Gym's)."""


def first_turn_messages(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Chat messages (role, content; assistant reasoning_content and tool_calls) for the row's create params."""
    messages: list[dict[str, Any]] = []
    if params.get("instructions"):
        messages.append({"role": "system", "content": params["instructions"]})
    items = params.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    pending_reasoning: list[str] = []
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "reasoning":
            pending_reasoning += [str(s.get("text", "")) for s in item.get("summary") or []]
        elif kind == "message":  # a Responses message item, or a chat-completions message (tool_calls, tool)
            message = {"role": item["role"], "content": content_text(item.get("content"))}
            if item["role"] == "assistant":
                message["reasoning_content"] = "".join(pending_reasoning)
                message["tool_calls"] = [
                    {"function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                    for c in item.get("tool_calls") or []
                ]
                pending_reasoning = []
            if item["role"] == "tool":
                message["tool_call_id"] = item.get("tool_call_id")
            messages.append(message)
        elif kind == "function_call":
            call = {"function": {"name": item["name"], "arguments": item["arguments"]}}
            last = messages[-1] if messages else {}
            if last.get("role") == "assistant" and not pending_reasoning:
                last["tool_calls"].append(call)
            else:
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "reasoning_content": "".join(pending_reasoning),
                        "tool_calls": [call],
                    }
                )
                pending_reasoning = []
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "content": content_text(item.get("output")), "tool_call_id": item["call_id"]}
            )
        else:
            raise UnsupportedInput(f"row input item of type {kind!r}")
    return messages


def seen(message: dict[str, Any]) -> dict[str, Any]:
    """What the model sees of one chat message, in the same shape as first_turn_messages produces."""
    out = {"role": message.get("role"), "content": content_text(message.get("content"))}
    if message.get("role") == "assistant":
        out["reasoning_content"] = message.get("reasoning_content") or message.get("reasoning") or ""
        out["tool_calls"] = [
            {"function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
            for c in message.get("tool_calls") or []
        ]
    if message.get("role") == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    return out


def tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the model sees it (name, description, parameters), in either the Responses or the chat shape."""
    fn = tool.get("function", tool)
    return {"name": fn.get("name"), "description": fn.get("description"), "parameters": fn.get("parameters")}


JUDGE_PARAMS = "judge_responses_create_params"  # where a Gym environment config sets its judge's sampling
# Responses-API sampling keys and the chat-completions names Gym's model server sends them under.
JUDGE_SAMPLING = {"temperature": "temperature", "top_p": "top_p", "max_output_tokens": "max_tokens"}


def judge_params(config: Path) -> dict[str, Any] | None:
    """The judge's create params the environment's own config declares (the first `judge_responses_create_params`
    in the file), or None when it declares none: what every judge request must carry, and nothing else."""

    def find(node: Any) -> dict[str, Any] | None:
        if isinstance(node, dict):
            if isinstance(node.get(JUDGE_PARAMS), dict):
                return node[JUDGE_PARAMS]
            for value in node.values():
                if (found := find(value)) is not None:
                    return found
        return None

    return find(yaml.safe_load(config.read_text()))


def judge_sampling(params: dict[str, Any], missing: Any) -> dict[str, Any]:
    """The sampling a judge request must carry, by its chat name: the config's value, or `missing` (absent)."""
    return {chat: params.get(key, missing) for key, chat in JUDGE_SAMPLING.items()}
