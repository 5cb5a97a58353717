"""A plan as values: each PathSpec as one JSON object (a line of the run folder's `plan.jsonl`), and back. The
harness plans once and hands the run exactly these; the in-environment session runs exactly them, each with the
environment of that name its own Gym declares. A line is whole: a path that derives from another carries it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gymgate.cases.environments import Environment
from gymgate.endpoint.script import Script
from gymgate.kinds import kind_of
from gymgate.pathid import PathId
from gymgate.paths.spec import PathSpec, Recorded, RowSource


def to_json(path: PathSpec) -> dict[str, Any]:
    return {
        "id": str(path.id),
        "env": path.env.name,
        "script": path.script.to_json(),
        "row": path.row.to_json(),
        "expect": path.expect,
        "tool_outputs": None if path.tool_outputs is None else list(path.tool_outputs),
        "metadata": path.metadata,
        "recorded": None if path.recorded is None else path.recorded.to_json(),
        "cannot_run": path.cannot_run,
        "of": None if path.of is None else to_json(path.of),
        "detail": kind_of(path.id).detail_to_json(path.detail),
    }


def from_json(data: dict[str, Any], envs: Mapping[str, Environment]) -> PathSpec:
    """The path a line holds, in the environment of its name among `envs` (a plan for an environment this Gym
    does not run is refused: ValueError)."""
    pid = PathId(data["id"])
    if data["env"] not in envs or pid.env != data["env"]:
        raise ValueError(f"plan entry {pid}: environment {data['env']!r} is not among {sorted(envs)}")
    return PathSpec(
        id=pid,
        env=envs[data["env"]],
        script=Script.from_json(data["script"]),
        row=RowSource.from_json(data["row"]),
        expect=data["expect"],
        tool_outputs=None if data["tool_outputs"] is None else tuple(data["tool_outputs"]),
        metadata=data["metadata"],
        recorded=None if data["recorded"] is None else Recorded.from_json(data["recorded"]),
        cannot_run=data["cannot_run"],
        of=None if data["of"] is None else from_json(data["of"], envs),
        detail=kind_of(pid).detail_from_json(data["detail"]),
    )


def read(lines: Iterable[dict[str, Any]], envs: Iterable[Environment]) -> list[PathSpec]:
    named = {e.name: e for e in envs}
    return [from_json(line, named) for line in lines]
