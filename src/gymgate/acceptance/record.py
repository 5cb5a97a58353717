"""The result record every path writes (JSON), the unit later comparisons work on.

It fails closed: a record starts as an ERROR ("did not run to its end") and becomes PASS only through
`complete()`, called after every check ran. Every ERROR names who is to blame (gymgate.outcomes).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gymgate.atomic import write_json_atomic
from gymgate.outcomes import BLAMES, ERROR, FAIL, HARNESS, PASS, SKIP, Outcome
from gymgate.text import strip_ansi

NOT_FINISHED = "the path did not run to its end"
NO_RECORD = "no record"  # the reason prefix of an expected path that left no record


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
    outcome: Outcome = ERROR
    reason: str = NOT_FINISHED
    blame: str = HARNESS  # for ERROR (and a contract FAIL); "" otherwise
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
    # Everything the model received and everything Gym returned, raw (compare/observation.py normalizes and diffs it).
    observed: dict[str, Any] = field(default_factory=dict)

    def fail(self, kind: str, name: str, expected: Any, actual: Any) -> None:
        self.failures.append(Failure(kind, name, expected, actual))

    def error(self, blame: str, reason: str) -> PathResult:
        if blame not in BLAMES:
            raise ValueError(f"unknown blame {blame!r}")
        self.outcome, self.blame, self.reason = ERROR, blame, reason
        return self

    def skip(self, reason: str) -> PathResult:
        self.outcome, self.blame, self.reason = SKIP, "", reason
        return self

    def complete(self, blame: str = "") -> PathResult:
        """The path ran to its end: PASS if no check failed, else FAIL with the first failures as its reason."""
        self.blame = blame
        if not self.failures:
            self.outcome, self.reason = PASS, ""
            return self
        self.outcome = FAIL
        self.reason = "; ".join(f.line() for f in self.failures[:3]) + (
            f" (+{len(self.failures) - 3} more)" if len(self.failures) > 3 else ""
        )
        return self

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reason"] = strip_ansi(data["reason"])
        return data

    def write(self, directory: Path) -> Path:
        return write_json_atomic(directory / f"{self.env}-{self.mode}.json", self.to_json())


def stub_record(
    path: str, outcome: Outcome, reason: str, gym: dict[str, Any] | None = None, blame: str = ""
) -> dict[str, Any]:
    """The record of a path that never ran (a crashed worker, a missing result, a BROKEN ref): a PathResult's
    shape with nothing measured, so every reader handles one shape."""
    env, mode = path.split(":")
    return PathResult(
        path=path, env=env, mode=mode, gym=gym or {}, outcome=outcome, reason=reason, blame=blame
    ).to_json()


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
