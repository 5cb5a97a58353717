"""A rollout's observation under load, and how it is held to the same path's observation alone: every request the
model received (grouped by caller, as a path record keeps them) and everything Gym returned, normalized by the
declared nondeterminism (compare/nondeterministic.toml) and with the rollout's own tag made one placeholder. Leaves
that differ between two runs of the path alone are the path's own nondeterminism: never held against a rollout."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from gymgate.compare.observation import flatten, rules, side_by_side
from gymgate.endpoint.server import TOKENIZE
from gymgate.runfolder.record import REQUESTS, RESULT
from gymgate.text import content_text

PLACEHOLDER = "<rollout>"


def observation(tag: str, exchanges: Iterable[Any], gym_result: Any) -> dict[str, Any]:
    """The leaves of one rollout's observation (`exchanges`: the endpoint's, of this rollout, in order)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for exchange in exchanges:
        if exchange.injected:  # an attempt a saturated server failed: its retry is the request that counts
            continue
        seen = grouped.setdefault(exchange.kind or exchange.route, [])
        asked = {"status": exchange.status, "body": exchange.body}
        if exchange.kind == TOKENIZE and seen and seen[-1] == asked:
            continue  # a retried call tokenizes its prompt again (Gym 0.2's model server): a run of them counts once
        seen.append(asked)
    text = json.dumps({REQUESTS: grouped, RESULT: gym_result}, sort_keys=True, default=str).replace(tag, PLACEHOLDER)
    leaves, _ = flatten(json.loads(text), rules())
    return leaves


def tool_output(exchanges: Iterable[Any], call_id: str) -> str | None:
    """What Gym gave the model back for one of its tool calls (the tool message answering `call_id`, as the next
    policy request carries it), or None when no request carried it."""
    for exchange in exchanges:
        messages = exchange.body.get("messages") if isinstance(exchange.body, dict) else None
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("tool_call_id") == call_id:
                return content_text(message.get("content"))
    return None


def differing(one: dict[str, Any], other: dict[str, Any]) -> set[str]:
    """The leaves two observations do not share with equal values."""
    return {k for k in one.keys() | other.keys() if k not in one or k not in other or one[k] != other[k]}


def retry_leaves(*observations: dict[str, Any]) -> set[str]:
    """The leaves a retried call may change beyond its failed attempts: its model server's /tokenize requests (Gym
    0.2's asks one per attempt, alike across a GRPO group's rollouts, so a retry's cannot be told from a sibling's).
    Under a saturated server these are not held against a rollout; what the model was asked and what Gym returned
    are."""
    prefix = f"{REQUESTS}.{TOKENIZE}."
    return {name for leaves in observations for name in leaves if name.startswith(prefix)}


def first_differences(alone: dict[str, Any], loaded: dict[str, Any], masked: set[str], limit: int = 3) -> list[dict]:
    """The leaves a loaded rollout does not share with its path alone (masked ones aside), shown side by side."""
    return shown_side_by_side(alone, loaded, sorted(differing(alone, loaded) - masked), limit)


def shown_side_by_side(alone: dict[str, Any], loaded: dict[str, Any], names: list[str], limit: int) -> list[dict]:
    """The first `limit` of the differing leaves `names`, alone and loaded side by side."""
    shown = []
    for name in names[:limit]:
        before, after = side_by_side(alone.get(name, "<absent>"), loaded.get(name, "<absent>"))
        shown.append({"field": name, "alone": before, "loaded": after})
    return shown


def call_attempts(exchanges: list[Any]) -> tuple[int, bool]:
    """(the most attempts one policy call of a rollout took: a run of failed attempts and the one answered; whether
    every call was answered in the end). A rollout's calls are sequential, so its exchanges in order are its calls'
    attempts in order."""
    longest = run = 0
    for exchange in exchanges:
        if exchange.kind and exchange.kind != "policy":
            continue
        run += 1
        if not exchange.injected:
            longest, run = max(longest, run), 0
    return max(longest, run), run == 0
