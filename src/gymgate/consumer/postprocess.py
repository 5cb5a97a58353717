"""One Gym result -> NeMo RL message_log (runs inside the Gym actor, as NeMo RL's does).

A trainable output item is one whose generation_token_ids is non-empty (Gym puts the token triple on the
last item of each model call). For each, the log gains the *new* prompt tokens as a user slice and the
generation as an assistant slice; the continuity invariant (every token seen so far is a prefix of the
next prompt) is checked explicitly, naming the turn and the first differing position.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gymgate.consumer.errors import NaNLogprobs, NoGenerationData, NonContiguousError, RolloutDataFailure, run_failure
from gymgate.text import first_difference

INVALID_TOOL_CALL_PATTERNS = ("<tool_call>", "</tool_call>", "<function_call>", "</function_call>")
THINKING_TAGS = ("<think>", "</think>")
TRIPLE = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")


def is_trainable(item: dict[str, Any]) -> bool:
    return bool(item.get("generation_token_ids"))


def _first_text(parts: Any) -> str | None:
    """The text of a non-empty list's first part, when that part is a dict with a string `text` (else None)."""
    if isinstance(parts, list) and parts and isinstance(parts[0], dict) and isinstance(parts[0].get("text"), str):
        return parts[0]["text"]
    return None


def flags(item: dict[str, Any]) -> tuple[bool, bool]:
    """(is_invalid_tool_call, has_malformed_thinking) for one trainable item, decided as RL decides it: by the
    item's shape, not its type. Content whose first part has a text is a message whatever the item's type (a
    reasoning item carrying text content included): any thinking tag in it is malformed. Otherwise a reasoning
    item's first summary text: a tag that appears more than once is. Anything else (a function call) is neither."""
    text = _first_text(item.get("content"))
    if text is not None:
        return any(p in text for p in INVALID_TOOL_CALL_PATTERNS), any(t in text for t in THINKING_TAGS)
    summary = _first_text(item.get("summary")) if item.get("type") == "reasoning" else None
    if summary is not None:
        return any(p in summary for p in INVALID_TOOL_CALL_PATTERNS), any(summary.count(t) > 1 for t in THINKING_TAGS)
    return False, False


def _ids(values: list[Any]) -> list[int]:
    return [int(v) for v in values]


def postprocess_result(result: Any, tokenizer) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise RolloutDataFailure(f"Hit a non-successful response when querying NeMo Gym for rollouts: {result!r:.500}")
    as_returned = copy.deepcopy(result)  # what Gym returned, before this consumer pops and adds anything
    output = (result.get("response") or {}).get("output") or []
    message_log: list[dict[str, Any]] = []
    seen: list[int] = []
    prompts, generations, items = [], [], []
    wire_types: set[str] = set()
    item_keys: set[str] = set()  # what Gym puts on training items (e.g. routed_experts from 0.4.0)
    for item in output:
        if not is_trainable(item):
            continue
        turn = len(items)
        wire_types.update(type(v).__name__ for v in item["generation_token_ids"])
        item_keys.update(item)
        prompt, generation = _ids(item["prompt_token_ids"]), _ids(item["generation_token_ids"])
        log_probs = [float(v) for v in item.pop("generation_log_probs")]
        if prompt[: len(seen)] != seen:
            at = first_difference(seen, prompt)
            raise NonContiguousError(
                f"Non-contiguous messages found at turn {turn}: the prompt differs from the tokens seen so far at "
                f"position {at} (seen {seen[max(0, at - 5) : at + 5]}, prompt {prompt[max(0, at - 5) : at + 5]}; "
                f"{len(seen)} seen, prompt has {len(prompt)}). Either tokens were merged when messages were "
                "concatenated, or the history was truncated or its reasoning stripped.",
                turn=turn,
                position=at,
            )
        if any(math.isnan(v) for v in log_probs):
            raise NaNLogprobs(f"Generation logprobs contain NaN (turn {turn})")
        invalid, malformed = flags(item)
        message_log.append({"role": "user", "content": "", "token_ids": np.array(prompt[len(seen) :], dtype=np.int64)})
        message_log.append(
            {
                "role": "assistant",
                "content": "",
                "token_ids": np.array(generation, dtype=np.int64),
                "generation_logprobs": np.array(log_probs, dtype=np.float32),
                "is_invalid_tool_call": invalid,
                "has_malformed_thinking": malformed,
            }
        )
        seen = prompt + generation
        for key in (*TRIPLE[:2], "routed_experts"):
            item.pop(key, None)
        prompts.append(prompt)
        generations.append(generation)
        items.append(item)
    if not items:
        raise NoGenerationData(
            f"NeMo Gym returned a result with no generation data. Output item types: {[i.get('type') for i in output]}"
        )
    for item, prompt_str, generation_str in zip(
        items, tokenizer.batch_decode(prompts), tokenizer.batch_decode(generations), strict=True
    ):
        item["prompt_str"], item["generation_str"] = prompt_str, generation_str
    return {
        "message_log": message_log,
        "input_message_log": message_log[:1],
        "full_result": result,
        "gym_result": as_returned,
        "wire": {"generation_token_id_types": sorted(wire_types), "trainable_item_keys": sorted(item_keys)},
    }


@dataclass(frozen=True)
class ActorSide:
    """The consumer's half that runs inside the Gym actor (services.gym_actor calls it, never imports it)."""

    tokenizer: Any

    def postprocess(self, result: Any) -> dict[str, Any]:
        return postprocess_result(result, self.tokenizer)

    def failure(self, exc: BaseException) -> Exception:
        return run_failure(exc)
