"""Which xdist worker owns which environment.

Both sides compute the same plan from the same inputs: the controller's scheduler sends an
environment's paths only to its owner, and each worker starts the Gyms it owns, all at once, as soon
as it comes up. Environments are dealt heaviest first (gymgate.balance.longest_first, the balancer of `accept
--shard`) by what their paths in this run cost (`run_costs`: shards/costs.toml's seconds per path), so workers
finish together: a worker's Gyms start together, so what differs between workers is the paths' own time.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from gymgate.balance import longest_first
from gymgate.pathid import PathId
from gymgate.shards.split import load_costs, load_path_costs


def worker_ids(count: int) -> list[str]:
    return [f"gw{i}" for i in range(count)]


def plan(envs: list[str], workers: int, costs: Mapping[str, float] | None = None) -> dict[str, str]:
    """env name -> worker id ("gw<i>"); with no xdist (workers <= 1) everything is "gw0". `costs`: seconds per
    environment (default: the measured ones, shards/costs.toml)."""
    names = sorted(set(envs))  # canonical: the scheduler and every worker agree whatever order they list in
    live = max(1, min(workers, len(names)))
    dealt = longest_first(names, live, load_costs() if costs is None else costs)
    return {env: worker for worker, group in zip(worker_ids(live), dealt, strict=True) for env in group}


def run_costs(paths: Iterable[PathId], measured: Mapping[str, float] | None = None) -> dict[str, float]:
    """Each environment's cost in a run of `paths`: its paths' measured seconds summed, a path never measured costing
    the median of the measured ones. Without measured paths: the environments' own measured costs."""
    measured = load_path_costs() if measured is None else measured
    if not measured:
        return load_costs()
    default = statistics.median(measured.values())
    costs: dict[str, float] = {}
    for path in paths:
        costs[path.env] = costs.get(path.env, 0.0) + measured.get(path, default)
    return costs


def live_share(assignment: Mapping[str, str], bound: int, worker: str) -> int:
    """This worker's share of the run's bound on environments up at once (`--max-envs`), in proportion to the
    environments each worker owns: a worker owning one environment leaves the rest of an even split to one owning
    six, which would otherwise start its sixth in a second wave (measured: +3 s on the default set's longest worker).
    Every worker owning any gets at least one; the shares sum to the bound, or to each worker's count when all fit."""
    counts: dict[str, int] = {}
    for owner in assignment.values():
        counts[owner] = counts.get(owner, 0) + 1
    total = sum(counts.values())
    if total <= bound:
        return max(1, counts.get(worker, 0))
    shares = {w: max(1, bound * c // total) for w, c in counts.items()}
    spare = bound - sum(shares.values())
    for owner in sorted(counts, key=lambda w: (-(counts[w] - shares[w]), w)):  # most left waiting first
        if spare <= 0:
            break
        shares[owner] += 1
        spare -= 1
    return shares.get(worker, 1)
