"""A byte-level tokenizer built locally with `tokenizers` and wrapped by `transformers`.

Token id == byte value for ids 0-255 (so any text round-trips and tokenization is prefix-stable);
message-boundary and tool/think markers are single special tokens above 255. Nothing is downloaded.
"""

from __future__ import annotations

import functools
from pathlib import Path

SPECIAL_TOKENS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
EOS = "<|im_end|>"
# gymgate's template does not open a thinking tag in the generation prompt: a turn with reasoning generates its own
# leading <think>, where a template like Nemotron-3's has already written it into the prompt. Rules written for
# such a template (a recipe's malformed-thinking penalty, rl/penalties.py) count that first tag as the prompt's.
THINK_OPENED_BY_GENERATION = True
MAX_LENGTH = 131072
TEMPLATE_PATH = Path(__file__).with_name("chat_template.jinja")


def byte_alphabet() -> list[str]:
    """The printable stand-in character for each byte 0-255, as byte-level BPE tokenizers use."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return [mapping[b] for b in range(256)]


@functools.lru_cache(maxsize=1)
def build_tokenizer():
    """The shared tokenizer (endpoint and consumer use this one definition). Picklable across Ray."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: PLC0415 - pin environment only
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415 - pin environment only

    vocab = {char: byte for byte, char in enumerate(byte_alphabet())}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|im_start|>",
        eos_token=EOS,
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[3:],
        model_max_length=MAX_LENGTH,
        chat_template=TEMPLATE_PATH.read_text(),
    )


def render(tokenizer, messages: list[dict], tools: list[dict] | None = None, generation_prompt: bool = True) -> str:
    return tokenizer.apply_chat_template(
        messages, tools=tools or None, tokenize=False, add_generation_prompt=generation_prompt
    )


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def assistant_body(tokenizer, message: dict) -> str:
    """The exact text the template renders for one assistant message between its header and <|im_end|>."""
    full = render(tokenizer, [message], generation_prompt=False)
    head, tail = "<|im_start|>assistant\n", EOS + "\n"
    assert full.startswith(head) and full.endswith(tail), full
    return full[len(head) : -len(tail)]
