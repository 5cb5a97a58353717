"""Environments gymgate has no case for, derived from the configuration the Gym itself declares — found the way
`gymgate case new` finds it (cases/draft.pairings), preferring the agent the server's recordings name. Such an
environment runs its recorded rollouts only (gymgate.paths.replayed): every expected value comes from Gym's own
recordings, so there is no drafted case to review. `--env-set all` selects every runnable server of the ref that
no case covers (cases/catalog.py says which can run here, and why the others cannot)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from gymgate.cases.catalog import catalog
from gymgate.cases.draft import GymConfig, pairings
from gymgate.cases.environments import MODEL_SERVER_NAME, Environment
from gymgate.cases.gym_layout import AGENTS, SERVERS, recorded_agents, server_configs, server_files
from gymgate.cases.runnable import usable_configs
from gymgate.errors import UsageError
from gymgate.recordings.read import GymFiles


@dataclass(frozen=True)
class NotRunnable:
    name: str
    why: str


def chosen_config(files: GymFiles, server: str, usable: list[str] | None = None) -> GymConfig:
    """The pairing the recordings were made with, where they name their agent; else the first declared. `usable`:
    only these configs (the catalog's: what nothing declared keeps from starting here)."""
    found = pairings(files, server)  # type: ignore[arg-type]
    if usable is not None:
        found = [p for p in found if p.path in usable]
        if not found:
            raise UsageError(f"none of {server}'s configs that can start here pairs it with an agent")
    for agent in recorded_agents(files, server):
        for pairing in found:
            if pairing.agent_key == agent:
                return pairing
    return found[0]


def model_routes(files: GymFiles, config: GymConfig, server: str) -> dict[str, str]:
    """Overrides pointing each model server the resources server calls (a judge, a reward model) at
    `policy_model`: gymgate's endpoint plays every model, as in a case; the config's own names (e.g. genrm_model)
    are defined by configs a run does not load."""
    data = yaml.safe_load(files.read(config.path) or "") or {}
    spec = ((data.get(config.server_key) or {}).get("resources_servers") or {}).get(server) or {}
    prefix = f"{config.server_key}.resources_servers.{server}"
    return {
        f"{prefix}.{key}.name": MODEL_SERVER_NAME
        for key, value in spec.items()
        if isinstance(value, dict)
        and value.get("type") == "responses_api_models"
        and value.get("name") != MODEL_SERVER_NAME
    }


def derive(files: GymFiles, server: str, usable: list[str] | None = None) -> Environment:
    """The environment of resources server `server` as the Gym declares it (`usable`: from these configs only).
    UsageError when no config pairs it with an agent."""
    config = chosen_config(files, server, usable)
    example = config.example or f"{SERVERS}/{server}/data/example.jsonl"
    return Environment(
        name=server,
        config=config.path,
        resources_server=config.server_key,
        agent=config.agent_key,
        server_dirs=(f"{SERVERS}/{server}", f"{AGENTS}/{config.agent_type}"),
        overrides=dict(model_routes(files, config, server)),
        derived_from=config.path,
        example=example,
        judged=config.judge,
    )


def absent(server: str) -> Environment:
    """An environment the Gym being run does not declare (a bump selected it from the other ref): its config is
    not there, so the fleet skips its paths the way it skips a case's (services/fleet.py)."""
    config = f"{SERVERS}/{server}/configs/{server}.yaml"
    return Environment(server, config, server, "", (f"{SERVERS}/{server}",), derived_from=config)


def derive_named(files: GymFiles, names: list[str]) -> list[Environment]:
    """Derived environments by name, as a run's session re-derives what the harness selected: one this Gym does not
    declare is `absent`."""
    envs = []
    for name in names:
        try:
            envs.append(derive_usable(files, name))
        except UsageError:
            envs.append(absent(name))
    return envs


def derive_usable(files: GymFiles, name: str) -> Environment:
    """`derive` from the configs nothing declared keeps from starting here: the same choice wherever it is made
    (the harness selecting, the session re-deriving)."""
    return derive(files, name, usable_configs(files, server_configs(server_files(files, name)))[0])


def runnable_here(files: GymFiles, covered: set[str]) -> tuple[list[Environment], list[NotRunnable]]:
    """Every resources server no case covers: derived when it can run here, else why not (the catalog's rules, or
    no config that pairs it with an agent)."""
    derived, others = [], []
    for item in catalog(files):  # type: ignore[arg-type]
        if item.cases or item.name in covered:
            continue
        if not item.runnable:
            others.append(NotRunnable(item.name, "; ".join(item.blockers)))
            continue
        if item.unjudgeable:
            others.append(NotRunnable(item.name, item.unjudgeable))
            continue
        try:
            derived.append(derive(files, item.name, item.usable))
        except UsageError as exc:
            others.append(NotRunnable(item.name, str(exc)))
    return derived, others
