"""A rollout path's id, `<environment>:<name>` (e.g. `mcqa:accepted`, or `mcqa:rec.3f2a9c1b0d` for a recorded
rollout replayed): parsed and formatted here only. The name is called `mode` for history: a hand-written case's
two paths are its modes.

A PathId is a str, so records, run marks, deadlines and reports keep writing the plain id; everything that needs
its environment or mode, or its file name, asks it instead of splitting the text.
"""

from __future__ import annotations

import re

MODES = ("accepted", "rejected")  # what a hand-written case's two paths do: earn the top reward, or not
REPLAY = "rec."  # a replayed recording's name: rec.<the recording's content key>
_ID = re.compile(r"^[^:\s]+:[^:\s-]+$")  # any environment and name (no '-': a record's file stem splits there)
_IN_NODE = re.compile(r"\[(?P<id>[A-Za-z0-9_.-]+:[A-Za-z0-9_.]+)\]$")


class PathId(str):
    __slots__ = ()

    def __new__(cls, text: str) -> PathId:
        if isinstance(text, PathId):
            return text
        if not _ID.match(text):
            raise ValueError(f"not a path id: {text!r} (paths look like mcqa:accepted)")
        return super().__new__(cls, text)

    @classmethod
    def of(cls, env: str, mode: str) -> PathId:
        return cls(f"{env}:{mode}")

    @classmethod
    def in_node(cls, nodeid: str) -> PathId | None:
        """The path id a pytest item's node id carries in its brackets (`…[mcqa:accepted]`), if any."""
        found = _IN_NODE.search(nodeid)
        return cls(found.group("id")) if found else None

    @classmethod
    def from_stem(cls, stem: str) -> PathId:
        """The path id a record's file name (its stem) stands for."""
        env, _, mode = stem.rpartition("-")
        return cls.of(env or stem, mode if env else "unknown")

    @property
    def env(self) -> str:
        return self.split(":", 1)[0]

    @property
    def mode(self) -> str:
        return self.split(":", 1)[1]

    @property
    def replayed(self) -> bool:
        """A recorded rollout replayed (gymgate.paths.replayed), not a hand-written case's path."""
        return self.mode.startswith(REPLAY)

    @property
    def stem(self) -> str:
        """The file name a path's record is stored under (paths/<stem>.json)."""
        return f"{self.env}-{self.mode}"


def both(envs: list[str]) -> list[PathId]:
    """Both paths of each environment, in order."""
    return [PathId.of(env, mode) for env in envs for mode in MODES]


def environments(paths: list[str]) -> list[str]:
    """The environments of these paths, each once, sorted."""
    return sorted({PathId(p).env for p in paths})
