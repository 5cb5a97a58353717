"""Text as it goes into files: no terminal colour codes (Ray and uvicorn colour their exceptions)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


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
