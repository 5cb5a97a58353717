"""Which xdist worker owns which environment.

Both sides compute the same plan from the same inputs: the controller's scheduler sends an
environment's paths only to its owner, and each worker starts the Gyms it owns, all at once, as soon
as it comes up. Environments are dealt heaviest first by their measured cost (shards/costs.toml, the same
balancer and costs as `accept --shard`: gymgate.balance.longest_first), so workers finish together.
"""

from __future__ import annotations

from collections.abc import Mapping

from gymgate.balance import longest_first
from gymgate.shards.plan import load_costs


def worker_ids(count: int) -> list[str]:
    return [f"gw{i}" for i in range(count)]


def plan(envs: list[str], workers: int, costs: Mapping[str, float] | None = None) -> dict[str, str]:
    """env name -> worker id ("gw<i>"); with no xdist (workers <= 1) everything is "gw0". `costs`: seconds per
    environment (default: the measured ones, shards/costs.toml)."""
    names = sorted(set(envs))  # canonical: the scheduler and every worker agree whatever order they list in
    live = max(1, min(workers, len(names)))
    dealt = longest_first(names, live, load_costs() if costs is None else costs)
    return {env: worker for worker, group in zip(worker_ids(live), dealt, strict=True) for env in group}


def owned_by(envs: list[str], workers: int, worker: str, costs: Mapping[str, float] | None = None) -> list[str]:
    assignment = plan(envs, workers, costs)
    return [e for e in envs if assignment[e] == worker]
