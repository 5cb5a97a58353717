"""Text as it goes into files: no terminal colour codes (Ray and uvicorn colour their exceptions)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# What differs between two runs of one failure and says nothing about it: process and actor ids, ports, addresses,
# hex ids and any other number. Masked before failures are grouped into root causes.
_VOLATILE = (
    (re.compile(r"\b(pid|ip|port|actor_id|task_id|node_id|job_id|worker_id)=[^,)\s]+"), r"\1=…"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<addr>"),
    (re.compile(r"\b(?:0x)?(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"\d+"), "N"),
)


def mask_volatile(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def content_text(content: object) -> str:
    """A chat or Responses message's content as the model reads it: a string, or the texts of its parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def first_difference(a: Sequence, b: Sequence) -> int:
    """The first position where two sequences (texts, token ids) differ; the shorter length if one is a prefix."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def excerpt(a: str, b: str, context: int = 60) -> tuple[str, str]:
    """Two long texts cut to the neighbourhood of their first difference ("…" marks what was cut), so a reader sees
    what changed instead of two digests. Short texts come back whole."""
    if len(a) <= 2 * context and len(b) <= 2 * context:
        return a, b
    at = first_difference(a, b)
    start = max(0, at - context)

    def cut(text: str) -> str:
        end = min(len(text), at + context)
        return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")

    return cut(a), cut(b)


def reward_text(reward: object) -> str:
    """A record's reward as a table shows it: one decimal for a number, the raw value (quoted, cut) for anything
    Gym sent that is not one (a string reward is itself a finding), nothing for none."""
    if reward is None:
        return ""
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        return f"{reward:.1f}"
    return repr(reward)[:12]
