"""A rollout Gym recorded against a real model, replayed (gymgate.paths.replayed builds its script and what it is
held to): one path per recording the refs ship for the environment's servers, by content key."""

from __future__ import annotations

from gymgate.cases.environments import Environment
from gymgate.kinds.protocol import PathKind, Planning
from gymgate.paths.replayed import replay_path
from gymgate.paths.spec import PathSpec


class RecordingKind(PathKind):
    name = "recording"

    def plan(self, env: Environment, planned: list[PathSpec], given: Planning) -> list[PathSpec]:
        return [replay_path(env, r) for r in sorted(given.recordings.get(env.name, ()), key=lambda r: r.key)]

    def cannot_run(self, path: PathSpec, result) -> None:
        result.fidelity = {"reproduces": False, "unreplayable": path.cannot_run}
        result.skip(f"recorded rollout not replayable here: {path.cannot_run}")


KIND = RecordingKind()
