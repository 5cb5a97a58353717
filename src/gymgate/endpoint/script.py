"""What the deterministic model says: scripted replies per case and mode, and their logprobs.

A script is data: a path's policy turns (text, reasoning, tool calls) and the judge's verdicts, from a case file
(cases/<env>.toml, per mode) or a recorded rollout (gymgate.paths.replayed). Logprobs are a pure function of (case, mode, caller,
turn, position), so tests can recompute and assert them exactly.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

UNSCRIPTED = "unscripted policy turn"  # how the endpoint refuses a turn beyond the script (case new reads it)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, exactly as sent to the agent

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ToolCall:
        args = data["arguments"]
        return cls(data["name"], args if isinstance(args, str) else json.dumps(args))


@dataclass(frozen=True)
class Turn:
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Turn:
        return cls(
            content=data.get("content", ""),
            reasoning=data.get("reasoning", ""),
            tool_calls=tuple(ToolCall.from_data(c) for c in data.get("tool_calls", [])),
        )


@dataclass(frozen=True)
class Script:
    """The active behaviour of the model for one path."""

    case: str
    mode: str
    turns: tuple[Turn, ...]
    judge_markers: tuple[str, ...] = ()
    judge_verdicts: tuple[str, ...] = ()  # what each judge call answers, in order (the last one answers any more)
    # A recorded rollout's turns: the real model produced them within the request's max_tokens, so their length in
    # gymgate's byte-level tokens does not refuse them.
    recorded: bool = False
    # The text the policy's conversation opens with (the row's first user message), for a judged environment with no
    # declared judge_markers (cases/derived.py): a request that does not carry it is the judge's, as is one that
    # carries the markers derived from the recorded judge requests (paths/replayed.judge_marker).
    opening: str = ""
    # A variant's calls its original does not make (indexes among all the script's tool calls, in order): a session
    # variant's read-only call (gymgate.variants.sessions), held apart from the original's calls.
    inserted_calls: tuple[int, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def judge_verdict(self, call: int) -> str:
        return self.judge_verdicts[min(call, len(self.judge_verdicts) - 1)] if self.judge_verdicts else ""

    @property
    def path_id(self) -> str:
        return f"{self.case}:{self.mode}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Script:
        turns = tuple(
            Turn(t["content"], t["reasoning"], tuple(ToolCall(**c) for c in t["tool_calls"])) for t in data["turns"]
        )
        tuples = {k: tuple(data.get(k, ())) for k in ("judge_markers", "judge_verdicts", "inserted_calls")}
        return cls(**{**data, "turns": turns, **tuples})


def logprob(script: Script, caller: str, turn: int, position: int) -> float:
    """Deterministic logprob in [-4.000, -0.001], three decimals."""
    key = f"{script.case}|{script.mode}|{caller}|{turn}|{position}".encode()
    value = int.from_bytes(hashlib.sha256(key).digest()[:4], "big")
    return -((value % 4000) + 1) / 1000.0


def logprobs(script: Script, caller: str, turn: int, count: int) -> list[float]:
    return [logprob(script, caller, turn, i) for i in range(count)]
