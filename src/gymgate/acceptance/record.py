"""The result record every path writes (JSON), the unit later comparisons work on."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gymgate.atomic import write_json_atomic

PASS, FAIL, ERROR, SKIP = "PASS", "FAIL", "ERROR", "SKIP"


@dataclass
class Failure:
    """One way a path differs from what it must be. `kind` names the contract that broke."""

    kind: str  # reward | verifier | tokens | request_contract | continuity | routing | tool_schema | row_count | tool_output
    field: str
    expected: Any
    actual: Any

    def line(self) -> str:
        return f"[{self.kind}] {self.field}: expected {_short(self.expected)}, got {_short(self.actual)}"


@dataclass
class PathResult:
    path: str  # "<env>:<mode>"
    env: str
    mode: str
    gym: dict[str, Any]
    outcome: str = PASS
    reason: str = ""
    failures: list[Failure] = field(default_factory=list)
    reward: float | None = None
    verifier: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    request_contract: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    row: dict[str, Any] = field(default_factory=dict)
    result_fields: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def fail(self, kind: str, name: str, expected: Any, actual: Any) -> None:
        self.failures.append(Failure(kind, name, expected, actual))

    def finish(self) -> PathResult:
        if self.outcome == PASS and self.failures:
            self.outcome = FAIL
            self.reason = "; ".join(f.line() for f in self.failures[:3]) + (
                f" (+{len(self.failures) - 3} more)" if len(self.failures) > 3 else ""
            )
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, directory: Path) -> Path:
        return write_json_atomic(directory / f"{self.env}-{self.mode}.json", self.to_json())


def stub_record(path: str, outcome: str, reason: str, gym: dict[str, Any] | None = None) -> dict[str, Any]:
    """The record of a path that never ran (a crashed worker, a missing result, a BROKEN ref): a PathResult's
    shape with nothing measured, so every reader handles one shape."""
    env, mode = path.split(":")
    return PathResult(path=path, env=env, mode=mode, gym=gym or {}, outcome=outcome, reason=reason).to_json()


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
