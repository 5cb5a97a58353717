"""A rollout path as one value: the row RL feeds, the model's script and every expected value its checks use."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gymgate.cases.environments import Environment
from gymgate.endpoint.script import Script
from gymgate.pathid import PathId


@dataclass(frozen=True)
class RowSource:
    """Where the path's row comes from: `file` line `line` of the running Gym, pinned by SHA256 (a case's), or
    carried with the path (`data`: a recording's row, read from the Gym that shipped the recording)."""

    file: str
    line: int
    sha256: str
    transforms: tuple[str, ...] = ()
    data: dict[str, Any] | None = None

    def provenance(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "sha256": self.sha256, "transforms": list(self.transforms)}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RowSource:
        return cls(**{**data, "transforms": tuple(data["transforms"])})


@dataclass(frozen=True)
class Recorded:
    """What a replayed path's recording says, kept for its checks and its record."""

    gym: str  # the Gym whose files held the recording
    file: str
    line: int
    sha256: str
    fields: dict[str, Any]  # the recording's reward and verifier fields (checked leaf by leaf)
    tool_outputs: tuple[str, ...]  # every function_call_output Gym returned, in order

    def provenance(self) -> dict[str, Any]:
        return {"gym": self.gym, "file": self.file, "line": self.line, "sha256": self.sha256}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recorded:
        return cls(**{**data, "tool_outputs": tuple(data["tool_outputs"])})


@dataclass(frozen=True)
class PathSpec:
    id: PathId
    env: Environment
    script: Script
    row: RowSource
    # Dotted field of Gym's result -> its expected value (a hand-written case's `expect`; a recording's reward).
    expect: dict[str, Any]
    # Every tool output Gym's result must carry, in order, exactly; None: not pinned (a draft observes them).
    tool_outputs: tuple[str, ...] | None
    # Each row field (but the create params and agent_ref) -> "returned" or why it does not come back; None: not
    # declared (a draft, before it observed them).
    metadata: dict[str, str] | None
    recorded: Recorded | None = None  # what Gym recorded that the path is held to (a replay's recording)
    cannot_run: str = ""  # why the path cannot run here ("" when it can); its kind says how that is recorded
    # The path this one derives from (its id's original: a fault path's accepted path, a variant's original), whole.
    of: PathSpec | None = None
    detail: Any = None  # the kind's own value (a fault path's Fault, a variant's Form): only its kind reads it

    @property
    def name(self) -> str:
        return self.id.mode

    @property
    def kind(self) -> str:
        """The name of its kind (pathkinds.toml): what gymgate.kinds.kind_of finds its behaviour by."""
        return self.id.kind.name
