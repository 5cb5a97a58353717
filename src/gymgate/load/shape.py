"""RL's shape of a load: GRPO groups (one row rolled out `group` times at once, each rollout its own sample),
mixed across the environment's rows, `level` rollouts in flight. Pure: which path each rollout of a round replays,
and the tag each carries."""

from __future__ import annotations

from collections.abc import Sequence


def round_paths(paths: Sequence[str], level: int, group: int, offset: int) -> list[list[str]]:
    """The groups of one round: `level` rollouts as whole groups of min(group, level) of one path each, the paths
    taken in turn from `offset` (rounds rotate it so every path is loaded at every level over a run)."""
    if not paths:
        return []
    size = max(1, min(group, level))
    count = max(1, level // size)
    return [[paths[(offset + i) % len(paths)]] * size for i in range(count)]


def tag(ref: str, env: str, level: int, round_no: int, group: int, member: int) -> str:
    """A rollout's tag: unique in the run, and saying where it came from when the endpoint refuses it."""
    return f"{ref}/{env}/L{level}/r{round_no}/g{group}/{member}"
