"""Model latency under load: how long the endpoint waits before answering a loaded rollout's policy or judge call
(the models declared in latency.toml beside this module). Pure and seeded: the same call of the same rollout waits
the same on every ref."""

from __future__ import annotations

import hashlib
import math
import tomllib
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

MODELS_FILE = Path(__file__).with_name("latency.toml")

P99_Z = NormalDist().inv_cdf(0.99)  # a log-normal's p99 is its median times exp(sigma * P99_Z)


@dataclass(frozen=True)
class LatencyModel:
    """A serving engine's latency as published (median and p99 of time to first token and time per output token),
    compressed by `scale`."""

    name: str
    title: str
    source: str
    ttft_ms: float
    ttft_p99_ms: float
    tpot_ms: float
    tpot_p99_ms: float
    scale: float = 1.0
    timed_tokens: int = 0  # the most tokens of one answer a call is timed for (0: all)

    @property
    def instant(self) -> bool:
        return self.scale * (self.ttft_ms + self.tpot_ms) <= 0

    def delay_s(self, key: str, tokens: int) -> float:
        """The wait before answering the call `key` names (a rollout's place in the run, its caller and turn) with
        `tokens` output tokens: a first token, then one per further token, each drawn from its log-normal (clipped
        at its p99) by the key alone."""
        if self.instant:
            return 0.0
        first = _draw(self.ttft_ms, self.ttft_p99_ms, key + "/ttft")
        per = _draw(self.tpot_ms, self.tpot_p99_ms, key + "/tpot")
        return self.scale * (first + per * self._further(tokens)) / 1000.0

    def mean_call_s(self, tokens: int) -> float:
        """A typical call's wait (medians), for planning which levels fit a round."""
        return 0.0 if self.instant else self.scale * (self.ttft_ms + self.tpot_ms * self._further(tokens)) / 1000.0

    def _further(self, tokens: int) -> int:
        """The answer's tokens after the first that its call is timed for."""
        timed = min(tokens, self.timed_tokens) if self.timed_tokens else tokens
        return max(0, timed - 1)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _draw(median_ms: float, p99_ms: float, key: str) -> float:
    """A seeded log-normal draw with this median and p99, never above the p99."""
    if median_ms <= 0:
        return 0.0
    sigma = math.log(max(p99_ms, median_ms) / median_ms) / P99_Z
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    u = (int.from_bytes(digest, "big") + 0.5) / 2**64  # in (0, 1)
    return median_ms * math.exp(sigma * min(NormalDist().inv_cdf(u), P99_Z))


def call_key(tag: str, kind: str, turn: int) -> str:
    """What seeds a call's wait: the rollout's tag without its ref (gymgate.load.shape.tag puts the ref first), the
    caller and its turn."""
    return f"{tag.split('/', 1)[-1]}/{kind}/{turn}"


@cache
def models(path: Path = MODELS_FILE) -> tuple[str, dict[str, LatencyModel]]:
    """(the default model's name, every declared model by name)."""
    data = tomllib.loads(path.read_text())
    found = {name: LatencyModel(name=name, **entry) for name, entry in data["model"].items()}
    if data["default"] not in found:
        raise ValueError(f"{path}: default latency model {data['default']!r} is not declared")
    return data["default"], found


def named(name: str = "") -> LatencyModel:
    """A declared latency model, the default when `name` is empty."""
    default, found = models()
    if (name or default) not in found:
        raise ValueError(f"no latency model {name!r} in {MODELS_FILE} (declared: {', '.join(found)})")
    return found[name or default]
