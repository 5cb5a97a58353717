"""The record of one path (`paths/<env>-<mode>.json`): written by the in-environment session, read back by
the harness, reruns, comparison and reports, always as this type.

It fails closed: a record starts as an ERROR ("did not run to its end") and becomes PASS only through
`complete()`, called after every check ran. Every ERROR names who is to blame (gymgate.outcomes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from gymgate.outcomes import BLAMES, ERROR, FAIL, HARNESS, PASS, SKIP, Outcome
from gymgate.pathid import PathId, sections
from gymgate.text import strip_ansi

NOT_FINISHED = "the path did not run to its end"
REQUESTS, RESULT = "requests", "result"  # the two halves of `PathRecord.observed`
NO_RECORD_REASON = (
    "no record"  # the reason prefix of an expected path that left no record (verdict.NO_RECORD: its label)
)


@dataclass
class Failure:
    """One way a path differs from what it must be. `kind` names the contract that broke."""

    kind: str  # reward | verifier | gym_failure | tokens | request_contract | continuity | routing | tool_schema |
    # row_count | tool_output | first_turn | input_drift | metrics | metadata | recording | fault | variant |
    # rl_reward
    field: str
    expected: Any
    actual: Any

    def line(self) -> str:
        return f"[{self.kind}] {self.field}: expected {_short(self.expected)}, got {_short(self.actual)}"


@dataclass
class PathRecord:
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
    missing: bool = False  # an expected path that left no record (a stub the reader made, never written)
    # The same path's later attempts in the same Gym (attempt 2, 3, …), each a whole record of its own (without
    # repeats): the comparison diffs them with attempt 1 to see what this Gym does not do the same way twice.
    repeats: list[dict[str, Any]] = field(default_factory=list)
    # A replayed recording's provenance (the Gym, file, line and SHA256 it came from); {} for a hand-written path.
    recording: dict[str, Any] = field(default_factory=dict)
    # Whether the replay reproduced its recording: {"reproduces": true}, or false with the leaves that differ and
    # the reviewed classification that explains them (recordings/fidelity.py); {} for a hand-written path.
    fidelity: dict[str, Any] = field(default_factory=dict)
    # What the run's RL profile decided for the path where it differs from a plain verdict (gymgate.rl.profile): the
    # diagnostic failure markers on a verdict that RL trains on (`trained_on_markers`), what a training recipe made
    # of the reward (`recipe`: its penalties that fired, the reward RL trains on); {} when nothing applied.
    rl: dict[str, Any] = field(default_factory=dict)
    # An attempt that erred in a Gym instance shared with other environments, run again alone (this record): the
    # shared instance's name and what that attempt came to (services/sharing.py); {} otherwise.
    alone_after: dict[str, Any] = field(default_factory=dict)
    # What only its kind records, by the section the kind declares (pathkinds.toml `section`): a fault path's fault
    # and how Gym handled it (`fault`, acceptance/faulted.py), a variant's form, original and both verdicts side by
    # side (`variant`, acceptance/variant.py). Written as top-level keys, every declared one ({} when not this
    # path's kind), so a record's shape is the same for every path.
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """What the kind that declares section `name` recorded on this path ({} when it recorded nothing)."""
        return self.sections.get(name) or {}

    def observe(self, requests: Iterable[tuple[str, int, Any]], result: Any) -> None:
        """Keep the path's full observation: every request the model received, as (kind, HTTP status, body), grouped
        by kind in order (`requests.policy.1`, `requests.judge.0`, `requests.tokenize.0`, so a kind of request that
        appears or vanishes shows as itself, not as a shift of every later request), and Gym's result as returned."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for kind, status, body in requests:
            grouped.setdefault(kind, []).append({"status": status, "body": body})
        self.observed = {REQUESTS: grouped, RESULT: result}

    def fail(self, kind: str, name: str, expected: Any, actual: Any) -> None:
        self.failures.append(Failure(kind, name, expected, actual))

    def error(self, blame: str, reason: str) -> PathRecord:
        if blame not in BLAMES:
            raise ValueError(f"unknown blame {blame!r}")
        self.outcome, self.blame, self.reason = ERROR, blame, reason
        return self

    def skip(self, reason: str) -> PathRecord:
        self.outcome, self.blame, self.reason = SKIP, "", reason
        return self

    def complete(self, blame: str = "") -> PathRecord:
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

    def attempt_records(self) -> list[PathRecord]:
        """Every attempt this record holds, in order: itself (attempt 1, repeats set aside), then each repeat."""
        first = replace(self, repeats=[])
        return [first, *(PathRecord.from_json(r) for r in self.repeats)]

    @property
    def file_stem(self) -> str:
        """The record's file name in paths/ (without .json); a record under another name is damaged."""
        return f"{self.env}-{self.mode}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reason"] = strip_ansi(data["reason"])
        kept = data.pop("sections")
        unknown = sorted(set(kept) - set(sections()))
        if unknown:
            raise ValueError(f"record sections no kind declares: {unknown}")
        return data | {name: kept.get(name, {}) for name in sections()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathRecord:
        """The record a file holds; anything that is not a record's shape raises ValueError (a damaged record)."""
        if not isinstance(data, dict):
            raise ValueError(f"a record is an object, not {type(data).__name__}")
        declared = sections()
        data = {k: v for k, v in data.items() if k not in declared} | {
            "sections": {k: data[k] for k in declared if data.get(k)}
        }
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        missing = sorted({"path", "env", "mode", "gym", "outcome"} - set(data))
        if unknown or missing:
            raise ValueError(f"not a path record (unknown fields {unknown}, missing fields {missing})")
        record = cls(**data)
        record.outcome = Outcome(record.outcome)
        record.failures = [Failure(**f) for f in data.get("failures") or []]
        if record.path != PathId.of(record.env, record.mode):
            raise ValueError(f"its path {record.path!r} is not {PathId.of(record.env, record.mode)}")
        return record

    @classmethod
    def stub(
        cls, path: str, outcome: Outcome, reason: str, gym: dict[str, Any] | None = None, blame: str = ""
    ) -> PathRecord:
        """The record of a path that never ran (a crashed worker, a missing result, a BROKEN ref): nothing measured,
        so every reader handles one shape."""
        path = PathId(path)
        return cls(path=path, env=path.env, mode=path.mode, gym=gym or {}, outcome=outcome, reason=reason, blame=blame)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
