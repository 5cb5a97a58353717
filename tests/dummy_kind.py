"""A kind of path written only for the tests, to prove that a kind is its own module and one declaration: `echo`,
each environment's accepted path run again with nothing declared of what it must come to but what its own check
asks — that Gym's reward is the one its accepted path declares. Nothing of gymgate knows it; `declare` writes the
declarations file with its entry added, and `register` points gymgate at that file (in this process; a session
started with PYTEST_PLUGINS=tests.dummy_kind and DECLARED_VAR set registers it there, and in its workers)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from gymgate import pathid
from gymgate.kinds.protocol import Check, PathKind, Planning, Prepared
from gymgate.pathid import MODES, PathId

NAME = "echo"
DECLARED_VAR = "GYMGATE_TEST_PATH_KINDS"  # read by this module only: where the declarations with `echo` are
ENTRY = f"""
[[kind]]
name = "{NAME}"
names = ["echo.{{times}}"]
original = "{MODES[0]}"
behaviour = "tests.dummy_kind"
"""


class Echo(PathKind):
    name = NAME

    def plan(self, env, planned: list, given: Planning) -> list:
        accepted = next((p for p in planned if p.name == MODES[0] and p.of is None), None)
        if accepted is None:
            return []
        pid = PathId.named(env.name, NAME, times="2")
        return [
            replace(accepted, id=pid, script=replace(accepted.script, mode=pid.mode), expect={}, of=accepted, detail=2)
        ]

    def detail_to_json(self, detail: int) -> Any:
        return detail

    def detail_from_json(self, data: Any) -> int:
        return int(data)

    def checks(self, path, result, prepared: Prepared, processed: dict) -> list[Check]:
        return [(NAME, lambda: same_reward(path, result, processed["full_result"]))]


def same_reward(path, result, full: dict) -> None:
    expected = path.of.expect.get("reward")
    if full.get("reward") != expected:
        result.fail(NAME, "reward (its accepted path's)", expected, full.get("reward"))


KIND = Echo()


def declare(folder: Path) -> Path:
    declared = folder / "pathkinds.toml"
    declared.write_text(pathid.DECLARED.read_text() + ENTRY)
    return declared


def register(declared: Path) -> None:
    pathid.DECLARED = declared
    pathid.kinds.cache_clear()


if os.environ.get(DECLARED_VAR):  # loaded into a session as a pytest plugin
    register(Path(os.environ[DECLARED_VAR]))
