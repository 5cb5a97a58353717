"""A hand-written case (cases/<env>.toml) as its two paths, accepted and rejected: everything they must come to is
written in the case. Every other behaviour is the protocol's own."""

from __future__ import annotations

from gymgate.cases.case import Case, load_case
from gymgate.cases.environments import Environment
from gymgate.kinds.protocol import PathKind, Planning
from gymgate.pathid import MODES, PathId
from gymgate.paths.spec import PathSpec, RowSource


def case_paths(env: Environment, case: Case | None = None) -> list[PathSpec]:
    """No paths for an environment without a case (cases/derived.py): it runs its recordings only."""
    if case is None and not env.has_case:
        return []
    case = case or load_case(env)
    row = RowSource(case.file, case.line, case.sha256, case.transforms)
    return [
        PathSpec(
            id=PathId.of(env.name, mode),
            env=env,
            script=case.script(mode),
            row=row,
            expect=dict(case.modes[mode].expect),
            tool_outputs=case.modes[mode].tool_outputs,
            metadata=case.metadata,
        )
        for mode in MODES
    ]


class Handwritten(PathKind):
    name = "handwritten"

    def plan(self, env: Environment, planned: list[PathSpec], given: Planning) -> list[PathSpec]:
        return case_paths(env)


KIND = Handwritten()
