"""The same row in the shapes RL's datasets give it: a row's `responses_create_params` rewritten so that it says the
same conversation another way (the system prompt as a message or as `instructions`, a message's text as a string or
as typed content parts, a past tool call as a Responses item or as a chat-completions message). The row as Gym ships
it is the oracle: the variant must come to its verdict.

Each rewrite returns the new row, or None when it does not fit (the row has nothing it rewrites)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]

SYSTEM_AS_INSTRUCTIONS = "system_as_instructions"
INSTRUCTIONS_AS_SYSTEM = "instructions_as_system"
TYPED_CONTENT = "typed_content"
CHAT_TOOL_CALLS = "chat_tool_calls"


def _params(row: Row) -> dict[str, Any] | None:
    params = row.get("responses_create_params")
    return params if isinstance(params, dict) and isinstance(params.get("input"), list) else None


def _text(content: Any) -> str | None:
    """A message's content as one text, when it is a string or text parts only."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    return None


def _is_message(item: Any, role: str | None = None) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type", "message") == "message"
        and "role" in item
        and (role is None or item["role"] == role)
    )


def system_as_instructions(row: Row) -> Row | None:
    """The leading system (or developer) message moved to `instructions`."""
    params = _params(row)
    if params is None or params.get("instructions") or not params["input"]:
        return None
    first = params["input"][0]
    if not (_is_message(first, "system") or _is_message(first, "developer")) or _text(first.get("content")) is None:
        return None
    row = copy.deepcopy(row)
    new = row["responses_create_params"]
    new["instructions"] = _text(first["content"])
    new["input"] = new["input"][1:]
    return row


def instructions_as_system(row: Row) -> Row | None:
    """`instructions` moved to a system message at the head of the input."""
    params = _params(row)
    if params is None or not isinstance(params.get("instructions"), str) or not params["instructions"]:
        return None
    row = copy.deepcopy(row)
    new = row["responses_create_params"]
    new["input"] = [{"role": "system", "content": new.pop("instructions")}, *new["input"]]
    return row


def typed_content(row: Row) -> Row | None:
    """Every message whose content is a string, as a typed Responses message item with one text part
    (`input_text`; `output_text` for the assistant's)."""
    params = _params(row)
    if params is None or not any(_is_message(i) and isinstance(i.get("content"), str) for i in params["input"]):
        return None
    row = copy.deepcopy(row)
    items = row["responses_create_params"]["input"]
    for index, item in enumerate(items):
        if _is_message(item) and isinstance(item.get("content"), str):
            part = "output_text" if item["role"] == "assistant" else "input_text"
            items[index] = {
                **item,
                "type": "message",
                "content": [{"type": part, "text": item["content"]}],
            }
    return row


def chat_tool_calls(row: Row) -> Row | None:
    """Past tool calls as a chat-completions history: each run of `function_call` items an assistant message with
    `tool_calls` and `content: null`, each `function_call_output` a `tool` message."""
    params = _params(row)
    if params is None or not any(isinstance(i, dict) and i.get("type") == "function_call" for i in params["input"]):
        return None
    row = copy.deepcopy(row)
    out: list[Any] = []
    for item in row["responses_create_params"]["input"]:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            last = out[-1] if out else None
            if isinstance(last, dict) and last.get("role") == "assistant" and last.get("tool_calls"):
                last["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        else:
            out.append(item)
    row["responses_create_params"]["input"] = out
    return row


REWRITES: dict[str, Callable[[Row], Row | None]] = {
    SYSTEM_AS_INSTRUCTIONS: system_as_instructions,
    INSTRUCTIONS_AS_SYSTEM: instructions_as_system,
    TYPED_CONTENT: typed_content,
    CHAT_TOOL_CALLS: chat_tool_calls,
}
