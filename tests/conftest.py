"""The order test files run in: the costliest first (tests/file_costs.toml). With `--dist loadfile` xdist hands out
whole files in collection order (`--no-loadscope-reorder`; by default it orders them by how many tests they hold,
which sent the cluster file, five long tests that mostly wait, last: CI's harness phase then ended with ~2 min at
25 % of the cores, one worker idle). Each file keeps its own order, so module fixtures are shared as before."""

from __future__ import annotations

import tomllib
from pathlib import Path

COSTS: dict[str, float] = tomllib.loads(Path(__file__).with_name("file_costs.toml").read_text())["seconds"]


def pytest_collection_modifyitems(session, config, items) -> None:
    items.sort(key=lambda item: -COSTS.get(item.nodeid.split("::")[0], 0.0))  # a stable sort
