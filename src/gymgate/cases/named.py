"""The environments a run asks for by name: each a case's, or, for a name no case has, derived from the Gym's own
config (cases/derived.py). Above both: environments.py, the leaf every case reader imports, knows nothing of
deriving."""

from __future__ import annotations

from gymgate.cases.derived import derive_named
from gymgate.cases.environments import DEFAULT_SET, Environment, all_environments, environment_sets
from gymgate.errors import UsageError


def load_environments(names: list[str] | None = None, gym=None) -> list[Environment]:
    """The environments named (any case), or the default set when none are. A name no case has is derived from the
    Gym's own config when `gym` (its files: recordings.read.GymFiles) is given (cases/derived.py)."""
    envs = all_environments()
    by_name = {e.name: e for e in envs}
    if names is None:
        names = environment_sets().get(DEFAULT_SET, list(by_name))
    unknown = [n for n in names if n not in by_name]
    if unknown and gym is not None:
        by_name.update({e.name: e for e in derive_named(gym, unknown)})
    elif unknown:
        raise UsageError(f"unknown environment(s) {', '.join(unknown)}; known: {', '.join(sorted(by_name))}")
    return [by_name[n] for n in names]
