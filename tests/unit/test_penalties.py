"""RL's reward penalties as a recipe turns them on (rl/penalties.py): each fires on exactly the shape RL's does, and
Gym's reward is left for the checks while the reward RL would train on is reported beside it."""

from __future__ import annotations

import pytest

from gymgate.rl import penalties
from gymgate.rl.profile import load

RECIPE = load("7ea279ab").recipe("nemotron-3-ultra")
SPECIAL = {"<think>": 300, "</think>": 301, "<|endoftext|>": 302}


class Tokens:
    """A stand-in for gymgate's tokenizer: the thinking tags and the document end are single tokens."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [SPECIAL[text]] if text in SPECIAL else [ord(c) for c in text]

    def convert_tokens_to_ids(self, token: str) -> int:
        return SPECIAL[token]


def message(text, kind="message"):
    return {"type": kind, "content": [{"type": "output_text", "text": text}]}


def reasoning(text):
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def result(output, log=None):
    log = log or [{"role": "user", "token_ids": [1, 2]}, {"role": "assistant", "token_ids": [3, 4]}]
    return {"full_result": {"reward": 1.0, "response": {"output": output}}, "message_log": log}


@pytest.mark.parametrize(
    ("output", "fires"),
    [
        ([reasoning("Paris."), message("Paris.")], [penalties.DUPLICATED_REASONING]),
        ([reasoning("It is the capital."), message("Paris.")], []),
        ([reasoning("Paris."), {"type": "function_call", "arguments": "{}"}, message("Paris.")], []),  # not adjacent
        ([message("   ")], [penalties.EMPTY_FINAL_ANSWER]),
        ([], [penalties.EMPTY_FINAL_ANSWER]),
        ([message("Paris."), {"type": "message", "content": []}], []),  # empty content is passed over
        ([message("x"), {"type": "function_call", "arguments": "{}"}], []),  # ends on a call: not judged
        ([message("<think>x</think>Paris.")], [penalties.MALFORMED_THINK_TAG]),  # flagged by the consumer, below
    ],
)
def test_each_penalty_fires_on_the_shape_rls_does(output, fires):
    made = result(output)
    made["message_log"][1]["has_malformed_thinking"] = any("<think>" in str(i.get("content")) for i in output)
    assert penalties.fired(made, RECIPE, Tokens()) == fires


def test_tokens_the_recipe_does_not_want_and_thinking_tags_by_token_id():
    unwanted = result(
        [message("Paris.")], [{"role": "user", "token_ids": [1]}, {"role": "assistant", "token_ids": [5, 302]}]
    )
    assert penalties.fired(unwanted, RECIPE, Tokens()) == [penalties.UNWANTED_TOKENS]
    # The prompt left a tag open: the generation must close it exactly once, and open none.
    closes = [{"role": "user", "token_ids": [300]}, {"role": "assistant", "token_ids": [7, 301, 8]}]
    assert penalties.fired(result([message("Paris.")], closes), RECIPE, Tokens()) == []
    opens = [{"role": "user", "token_ids": [1]}, {"role": "assistant", "token_ids": [7, 300, 7, 301, 8]}]
    assert penalties.fired(result([message("Paris.")], opens), RECIPE, Tokens()) == [penalties.MALFORMED_THINK_TAG]
    # gymgate's template leaves the opening tag to the generation: one leading open tag is the prompt's.
    leading = [{"role": "user", "token_ids": [1]}, {"role": "assistant", "token_ids": [300, 7, 301, 8]}]
    assert penalties.fired(result([message("Paris.")], leading), RECIPE, Tokens()) == []
    twice = [{"role": "user", "token_ids": [1]}, {"role": "assistant", "token_ids": [300, 7, 300, 301, 8]}]
    assert penalties.fired(result([message("Paris.")], twice), RECIPE, Tokens()) == [penalties.MALFORMED_THINK_TAG]


def test_the_reward_rl_trains_on_is_reported_beside_gyms():
    made = [result([message("  ")]), result([message("Paris.")])]
    judged = penalties.judged(made, RECIPE, Tokens())
    assert [(j["penalties"], j["reward"]) for j in judged] == [([penalties.EMPTY_FINAL_ANSWER], 0.0), ([], 1.0)]
    assert made[0]["full_result"]["reward"] == 1.0  # Gym's own, for the checks


def test_a_recipe_the_profile_does_not_declare_is_a_usage_error():
    from gymgate.errors import UsageError
    from gymgate.harness.run_options import RunOptions

    with pytest.raises(UsageError, match="declares no recipe 'nope' .*nemotron-3-ultra"):
        RunOptions(rl_recipe="nope")
    assert RunOptions(rl_recipe="nemotron-3-ultra").consumer.endswith("+nemotron-3-ultra")
