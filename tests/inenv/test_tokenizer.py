"""The byte-level tokenizer: byte ids, single-id specials, prefix stability, 131k tokens, pickling."""

from __future__ import annotations

import pickle

import pytest

from gymgate.endpoint.tokenizer import EOS, MAX_LENGTH, assistant_body, build_tokenizer, encode, render


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def test_byte_values_are_token_ids(tok):
    assert encode(tok, "A") == [65]
    assert encode(tok, "é") == [0xC3, 0xA9]
    assert encode(tok, "\n\t ") == [10, 9, 32]
    assert tok.decode(list(b"hello")) == "hello"


def test_special_tokens_are_single_ids_above_bytes(tok):
    ids = encode(tok, "<|im_start|>x<|im_end|><think>")
    assert ids[1] == ord("x") and all(i > 255 for i in (ids[0], ids[2], ids[3]))
    assert tok.eos_token_id == tok.convert_tokens_to_ids(EOS) == ids[2]
    assert tok.pad_token_id not in (tok.eos_token_id, None)


@pytest.mark.parametrize("a,b", [("abc", "def"), ("é", "ü"), ("x<|im_end|>", "\ny"), ('{"a":', " 1}"), ("", "z")])
def test_tokenization_is_prefix_stable(tok, a, b):
    assert encode(tok, a + b) == encode(tok, a) + encode(tok, b)


def test_long_prompts_fit_the_byte_token_limit(tok):
    assert tok.model_max_length == MAX_LENGTH == 131072
    assert len(encode(tok, "x" * 40_000)) == 40_000


def test_template_renders_roles_reasoning_tools_and_tool_outputs(tok):
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": [{"type": "input_text", "text": "U"}]},
        {
            "role": "assistant",
            "content": "ok",
            "reasoning_content": "R",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "OUT"},
    ]
    text = render(tok, messages, tools=[{"type": "function", "function": {"name": "f"}}])
    assert text.startswith('<|im_start|>system\n# Tools\n{"type": "function", "function": {"name": "f"}}\n<|im_end|>\n')
    assert "<|im_start|>user\nU<|im_end|>\n" in text
    assert (
        '<|im_start|>assistant\n<think>R</think>ok<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call><|im_end|>\n'
        in text
    )
    assert text.endswith("<|im_start|>tool\nOUT<|im_end|>\n<|im_start|>assistant\n")
    assert (
        assistant_body(tok, messages[2])
        == '<think>R</think>ok<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    )


def test_survives_pickling_as_ray_ships_it(tok):
    import ray.cloudpickle as cloudpickle

    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        copy = loads(dumps(tok))
        assert encode(copy, "héllo<|im_end|>") == encode(tok, "héllo<|im_end|>")
        assert copy.batch_decode([[104, 105]]) == ["hi"]
        assert render(copy, [{"role": "user", "content": "q"}]) == render(tok, [{"role": "user", "content": "q"}])
