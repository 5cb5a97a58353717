"""Text as it goes into files: no terminal colour codes (Ray and uvicorn colour their exceptions)."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)
