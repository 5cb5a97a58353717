"""RL's reward penalties, as a training recipe turns them on (`--rl-recipe`, rl/profiles/*.toml [recipes]): each sets
a sample's reward to 0.0 before RL computes its metrics and batch, so a Gym change that trips one under that recipe
is a reward change here too, not only a change in the shape of Gym's output. Written from RL's behaviour at
7ea279ab (nemo_rl/experience/rollouts.py, apply_reward_penalties), in gymgate's own code.

Runs where the consumer runs (the pin environment), on processed results: `full_result` (Gym's result, with the
consumer's `generation_str` on trainable items) and `message_log` (user and assistant token slices, with the
assistant's `has_malformed_thinking` flag)."""

from __future__ import annotations

from typing import Any

from gymgate.endpoint.tokenizer import THINK_OPENED_BY_GENERATION
from gymgate.rl.profile import Recipe

DUPLICATED_REASONING = "penalize_duplicated_reasoning"
EMPTY_FINAL_ANSWER = "penalize_empty_final_answer"
UNWANTED_TOKENS = "penalize_unwanted_tokens"
MALFORMED_THINK_TAG = "penalize_malformed_think_tag"
PENALTIES = (DUPLICATED_REASONING, EMPTY_FINAL_ANSWER, UNWANTED_TOKENS, MALFORMED_THINK_TAG)  # RL's order
PENALIZED_REWARD = 0.0


def _output(full: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in ((full.get("response") or {}).get("output") or []) if isinstance(i, dict)]


def _text_of(item: dict[str, Any]) -> str | None:
    """An item's answer text as RL reads it: its first content part's text, or content that is a string; "" for an
    item without content; None for content of another shape."""
    if "content" not in item:
        return ""
    content = item["content"]
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], dict) and "text" in content[0]:
        return str(content[0]["text"])
    return None


def duplicated_reasoning(full: dict[str, Any]) -> bool:
    """A reasoning item whose first summary text equals (stripped, non-empty) the text of the item right after it."""
    items = _output(full)
    for first, second in zip(items, items[1:], strict=False):
        summary = first.get("summary")
        if first.get("type") != "reasoning" or not (isinstance(summary, list) and summary):
            continue
        if not isinstance(summary[0], dict) or "text" not in summary[0]:
            continue
        reasoning, answer = str(summary[0]["text"]).strip(), _text_of(second)
        if answer is not None and reasoning and reasoning == answer.strip():
            return True
    return False


def empty_final_answer(full: dict[str, Any]) -> bool:
    """No final answer text: the last item that has content with a text says nothing (or no item has one). A rollout
    that ends on a function call is not judged."""
    items = _output(full)
    if items and items[-1].get("type") == "function_call":
        return False
    for item in reversed(items):
        if "content" not in item:
            continue
        text = _text_of(item)
        if text is not None:
            return not text.strip()
    return True


def unwanted_tokens(message_log: list[dict[str, Any]], unwanted: set[int]) -> bool:
    """An unwanted token id anywhere in what the model generated."""
    return any(int(token) in unwanted for m in message_log if m.get("role") == "assistant" for token in m["token_ids"])


def malformed_think_tag(
    full: dict[str, Any],
    message_log: list[dict[str, Any]],
    think: tuple[int, int] | None,
    tags: tuple[str, str],
    opened_by_generation: bool = THINK_OPENED_BY_GENERATION,
) -> bool:
    """Thinking tags where they do not belong: an assistant turn the consumer flagged; by token ids (when both tags
    are single tokens), a generation that opens a tag, or closes one its new prompt did not leave open; by text, a
    generation that opens a tag or closes more than one. `opened_by_generation`: the endpoint's template leaves the
    opening tag to the generation (endpoint/tokenizer.py), so a generation's one leading open tag is counted as the
    prompt's, as a template that opens it would have it."""
    if any(m.get("has_malformed_thinking") for m in message_log if m.get("role") == "assistant"):
        return True
    if think is not None:
        opened, closed = think
        pairs = zip(message_log[0::2], message_log[1::2], strict=False)
        for user, assistant in pairs:
            prompt, generation = [int(t) for t in user["token_ids"]], [int(t) for t in assistant["token_ids"]]
            if opened_by_generation and generation[:1] == [opened]:
                prompt, generation = [*prompt, opened], generation[1:]
            left_open = prompt.count(opened) - prompt.count(closed)
            wanted_closes = {0: 0, 1: 1}.get(left_open)
            if wanted_closes is None or generation.count(opened) or generation.count(closed) != wanted_closes:
                return True
    for item in _output(full):
        text = item.get("generation_str") or ""
        if opened_by_generation and text.startswith(tags[0]):
            text = text[len(tags[0]) :]
        if text and (text.count(tags[0]) > 0 or text.count(tags[1]) > 1):
            return True
    return False


def think_ids(tokenizer: Any, tags: tuple[str, str]) -> tuple[int, int] | None:
    """Both tags' token ids when each is one token of the tokenizer (else RL skips the token-id check)."""
    found = [tokenizer.encode(tag, add_special_tokens=False) for tag in tags]
    return (found[0][0], found[1][0]) if all(len(ids) == 1 for ids in found) else None


def fired(result: dict[str, Any], recipe: Recipe, tokenizer: Any) -> list[str]:
    """The recipe's penalties that fire for one processed result, in RL's order."""
    full, log = result["full_result"], result["message_log"]
    unwanted = {tokenizer.convert_tokens_to_ids(t) for t in recipe.unwanted_tokens}
    checks = {
        DUPLICATED_REASONING: lambda: duplicated_reasoning(full),
        EMPTY_FINAL_ANSWER: lambda: empty_final_answer(full),
        UNWANTED_TOKENS: lambda: unwanted_tokens(log, unwanted),
        MALFORMED_THINK_TAG: lambda: malformed_think_tag(
            full, log, think_ids(tokenizer, recipe.think_tags), recipe.think_tags
        ),
    }
    return [name for name in PENALTIES if name in recipe.penalties and checks[name]()]


def judged(results: list[dict[str, Any]], recipe: Recipe, tokenizer: Any) -> list[dict[str, Any]]:
    """What the recipe makes of each result: the penalties that fire and the reward RL trains on (0.0 where one
    fires; RL sets it in `full_result` before its metrics and batch). Gym's own reward is left in the result: the
    checks hold it to the case, and a penalty that changes it fails the path (acceptance/checks.check_rl_reward)."""
    found = []
    for result in results:
        names = fired(result, recipe, tokenizer)
        reward = result["full_result"].get("reward")
        found.append({"recipe": recipe.name, "penalties": names, "reward": PENALIZED_REWARD if names else reward})
    return found
