"""The hand-written paths' inputs: each environment's Gym row (pinned by SHA256), the declared fixture
transforms, the scripted model behaviour per mode and the expected verifier outcome (cases/<env>.toml)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate.cases.environments import Environment
from gymgate.endpoint.script import Script, Turn
from gymgate.pathid import MODES

NULL = "null"  # TOML has no null: this string in `expect` means JSON null
RETURNED = "returned"  # a [row.metadata] field Gym's result must carry unchanged


class InputDrift(Exception):
    """The pin's example row is not the bytes the case was written against."""

    def __init__(self, env: str, file: str, expected: str, actual: str):
        super().__init__(f"{env}: {file} line differs from the case: expected sha256:{expected}, found sha256:{actual}")
        self.expected, self.actual = expected, actual


@dataclass(frozen=True)
class Mode:
    name: str
    turns: tuple[Turn, ...]
    judge: tuple[str, ...]  # what each judge call answers, in order (a verifier may ask its judge more than once)
    expect: dict[str, Any]
    # Every tool output Gym's result must carry, in order, exactly (what the tools return for this behaviour);
    # None only in a draft (`gymgate case new` observes them).
    tool_outputs: tuple[str, ...] | None = ()


@dataclass(frozen=True)
class Case:
    env: Environment
    file: str
    line: int
    sha256: str
    transforms: tuple[str, ...]
    modes: dict[str, Mode]
    # Each row field (but the create params and agent_ref) -> RETURNED (Gym's result must carry it unchanged), or
    # why it does not come back ([row.metadata] in the case file); None only in a draft (observed while drafting).
    metadata: dict[str, str] | None = field(default_factory=dict)

    def script(self, mode: str) -> Script:
        spec = self.modes[mode]
        return Script(self.env.name, mode, spec.turns, self.env.judge_markers, spec.judge)


def load_case(env: Environment) -> Case:
    data = tomllib.loads(env.case_file.read_text())
    row = data["row"]
    modes = {
        name: Mode(
            name=name,
            turns=tuple(Turn.from_data(t) for t in data[name]["turns"]),
            judge=_judge_replies(data[name].get("judge", ())),
            expect=dict(data[name]["expect"]),
            tool_outputs=_declared(data[name], "tool_outputs", env, tuple),
        )
        for name in MODES
    }
    return Case(
        env,
        row["file"],
        int(row.get("line", 0)),
        row["sha256"],
        tuple(row.get("transforms", ())),
        modes,
        _declared(row, "metadata", env, dict),
    )


def _judge_replies(value: str | list[str]) -> tuple[str, ...]:
    """A mode's `judge`: one reply (every judge call gets it) or a list, one per judge call in order."""
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(value)


def _declared(table: dict[str, Any], key: str, env: Environment, kind: type) -> Any:
    """`key` of a case table as `kind`; absent: nothing (kind()) in a reviewed case, unknown (None) in a draft."""
    if key in table:
        return kind(table[key])
    return None if env.draft else kind()


def read_row(case: Case, gym_root: Path) -> str:
    """The raw line (newline kept) from the pin's own data file; InputDrift when its bytes changed."""
    return read_pinned(case.file, case.line, case.sha256, case.env.name, gym_root)


def read_pinned(file: str, line: int, sha256: str, env: str, gym_root: Path) -> str:
    """Line `line` (newline kept) of the running Gym's `file`; InputDrift when its bytes are not `sha256`'s."""
    raw = (gym_root / file).read_text().splitlines(keepends=True)[line]
    actual = hashlib.sha256(raw.encode()).hexdigest()
    if actual != sha256:
        raise InputDrift(env, file, sha256, actual)
    return raw


def shipped_row(case: Case, text: str | None) -> dict[str, Any] | None:
    """The case's row from its data file's text, after the case's transforms; None when the text does not hold
    the pinned bytes (the run reports that: InputDrift)."""
    lines = (text or "").splitlines(keepends=True)
    if case.line >= len(lines) or hashlib.sha256(lines[case.line].encode()).hexdigest() != case.sha256:
        return None
    return transform_row(case, lines[case.line])


def transform_row(case: Case, raw: str) -> dict[str, Any]:
    """The row a consumer feeds Gym: the example row plus the case's declared transforms, nothing else."""
    return apply_transforms(json.loads(raw), case.transforms, case.env)


def apply_transforms(row: dict[str, Any], transforms: tuple[str, ...], env: Environment) -> dict[str, Any]:
    """The one transform is what an RL dataset carries that Gym's example files lack (an agent_ref); nothing
    changes what RL sends of the row itself — NeMo RL forwards `responses_create_params` as the row has it, nulls
    included."""
    row = dict(row)
    for name in transforms:
        if name == "add_agent_ref":
            # Gym's example files name no agent; a consumer's prepared data carries one per row.
            row.setdefault("agent_ref", {"type": "responses_api_agents", "name": env.agent})
        else:
            raise ValueError(f"{env.case_file}: unknown transform {name!r}")
    return row


def lookup(data: Any, dotted: str) -> Any:
    """`a.0.b` into nested dicts and lists; KeyError naming the missing step."""
    node = data
    for step in dotted.split("."):
        if isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            raise KeyError(f"{dotted} (no {step!r})")
    return node
