"""Which of a Gym tree's test folders a run covers: Gym's core (`tests/`), and per environment its resources server,
its agent and the model server every environment is routed through, each the way Gym's own `ng_test` runs it (from
the server's folder, so its own modules import as its tests expect)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gymgate.cases.environments import Environment
from gymgate.options.declared import GYM_TEST_SCOPES as SCOPES

NONE, ENVS, CORE, ALL = SCOPES  # --gym-tests: none, the run's environments' servers, Gym's core, both


@dataclass(frozen=True)
class Root:
    """One test folder: `path` is its server's folder in the tree ("" for the core), `label` what reports call it."""

    path: str
    label: str

    @property
    def tests(self) -> str:
        """The folder of test files, relative to the tree."""
        return f"{self.path}/tests" if self.path else "tests"


def _label(server_dir: str, owners: Sequence[str]) -> str:
    kind, name = server_dir.split("/", 1)
    if kind == "resources_servers":
        return ", ".join(owners)
    return f"{'agent' if kind == 'responses_api_agents' else 'model'} {name}"


def roots_for(envs: Sequence[Environment], scope: str) -> list[Root]:
    """The roots of `scope` for these environments, each once, servers before agents and models, the core last."""
    owners: dict[str, list[str]] = {}
    if scope in (ENVS, ALL):
        for env in envs:
            for server_dir in env.all_server_dirs:
                owners.setdefault(server_dir, []).append(env.name)
    order = sorted(owners, key=lambda d: (not d.startswith("resources_servers/"), d))
    roots = [Root(d, _label(d, owners[d])) for d in order]
    if scope in (CORE, ALL):
        roots.append(Root("", CORE))
    return roots


def root_of(nodeid: str, roots: Sequence[Root]) -> Root | None:
    """The root a node id (from the tree's top) belongs to: the longest root folder it is in; the core's tests
    belong to the core."""
    inside = [r for r in roots if r.path and nodeid.startswith(f"{r.path}/")]
    if inside:
        return max(inside, key=lambda r: len(r.path))
    return next((r for r in roots if not r.path and nodeid.startswith("tests/")), None)


def root_of_test(nodeid: str) -> Root:
    """The root a test's node id alone says it is in: the core's (`tests/…`) or a server's (`kind/name/tests/…`)."""
    parts = nodeid.split("::", 1)[0].split("/")
    if parts[0] == "tests":
        return Root("", CORE)
    if len(parts) > 3 and parts[2] == "tests":
        path = "/".join(parts[:2])
        return Root(path, _label(path, [parts[1]]))
    raise ValueError(f"{nodeid}: not in Gym's core tests/ nor in a server's tests/ folder")
