"""The options every run of one command shares, as one typed value, and one run of a ref as data (RefRun): what a command's function takes (filled from
the command line by gymgate.options.bind), what each ref's run is given, and what a cluster node receives. Apart
from harness/run.py so that a command can name it without loading the run's machinery."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gymgate.options import default
from gymgate.refs.source import GymSource
from gymgate.rl.profile import load as load_profile


@dataclass(frozen=True)
class RunOptions:
    """What every run of one command shares, whichever ref it is for; the defaults are the options' own
    (gymgate.options)."""

    envs: list[str] | None = None
    runs_dir: Path | None = None
    spinup_timeout: float = default("spinup_timeout")
    workers: str = default("workers")
    max_envs: int = default("max_envs")  # Gyms up at once (session/worker.py: waves)
    share: int = default("share")  # environments per Gym instance (services/sharing.py)
    selftest: bool = default("selftest")
    path_timeout: float = default("path_timeout")
    stop_timeout: float = default("stop_timeout")
    cache: bool = default("cache")  # serve a ref from a stored clean run with the same inputs (compare/reuse.py)
    # also serve a complete run with the same inputs started at or after this time, whatever its verdict (the runs of
    # one nox matrix invocation: compare/reuse.py)
    reuse_since: float = default("reuse_since")
    shard: str = default("shard")  # "K/N" when this run is one shard of a ref's environments (shards/split.py)
    attempts: int = default("attempts")  # attempts of each path in one Gym (runner/path.py)
    rl_profile: str = default("rl_profile")  # which RL the paths are judged as (gymgate.rl.profile)
    rl_recipe: str = default("rl_recipe")  # a training recipe's reward penalties ("": none)
    load_latency: str = default("load_latency")  # how long the model takes under --load (endpoint/latency.toml)
    # path id -> its rollout deadline (acceptance/limits.py); not an option: a bump derives it from its baseline
    deadlines: Mapping[str, float] = field(default_factory=dict)
    # The paths the command planned for every one of its refs (gymgate.kinds.planfile, one dict a path); not an option
    plan: tuple[dict[str, Any], ...] = ()
    # Some environment has no case (cases/derived.py): the ref's wide environment carries its requirements; not an
    # option: --env-set all implies it
    wide: bool = False
    ray_address: str = default("ray_address")  # a cluster runs each ref (remote/): harness/executor.py
    ray_python: str = default("ray_python")

    def __post_init__(self) -> None:
        if self.rl_recipe:  # a recipe the profile does not declare is a usage error before anything runs
            load_profile(self.rl_profile).recipe(self.rl_recipe)

    @property
    def consumer(self) -> str:
        """Which RL the paths are judged as, for the cache key: the profile, and the recipe if any."""
        return f"{self.rl_profile}+{self.rl_recipe}" if self.rl_recipe else self.rl_profile

    def paths_of(self, expected: list[str]) -> list[dict[str, Any]]:
        """The planned paths among `expected`, in plan order: exactly what a run of them runs."""
        wanted = set(expected)
        return [p for p in self.plan if p["id"] in wanted]

    def to_json(self) -> dict[str, Any]:
        """What a cluster node runs the ref with (remote/unit_spec.py): every field but where runs go and the cluster
        itself, which are the node's own."""
        kept = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in LOCAL_ONLY}
        return {**kept, "deadlines": dict(self.deadlines), "plan": list(self.plan)}

    @classmethod
    def from_json(cls, data: dict[str, Any], runs_dir: Path | None = None) -> RunOptions:
        known = {f.name for f in fields(cls)} - LOCAL_ONLY
        values = {k: v for k, v in data.items() if k in known}
        return cls(**{**values, "plan": tuple(values.get("plan", ()))}, runs_dir=runs_dir)


LOCAL_ONLY = frozenset({"runs_dir", "ray_address", "ray_python"})  # never sent to a node


@dataclass(frozen=True)
class RefRun:
    """One run of a ref as data: what an executor runs (harness/executor.py), one after another here or all at once
    on a cluster."""

    source: GymSource
    expected: list[str]
    opts: RunOptions
    reuse: bool = False
    run_dir: Path | None = None
    narrowed: bool = False
    title: str = ""  # announced before it runs ("matrix 2/9: 0.3.0")
