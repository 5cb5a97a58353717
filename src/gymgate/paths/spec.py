"""A rollout path as one value: the row RL feeds, the model's script and every expected value its checks use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymgate.cases.environments import Environment
from gymgate.endpoint.script import Script
from gymgate.faults.spec import Fault
from gymgate.pathid import PathId
from gymgate.variants.forms import Form

CASE, RECORDING, FAULT, VARIANT = (
    "case",
    "recording",
    "fault",
    "variant",
)  # where a path came from (shown, never judged on)


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
    origin: str = CASE
    recorded: Recorded | None = None
    unreplayable: str = ""  # why a recorded path cannot run here ("" when it can)
    fault: Fault | None = None  # the call the endpoint fails on this path (a fault path: paths/faulted.py)
    # A variant path's original (its oracle) and the form its answer is rewritten in (paths/variant.py).
    variant_of: PathSpec | None = None
    form: Form | None = None

    @property
    def name(self) -> str:
        return self.id.mode
