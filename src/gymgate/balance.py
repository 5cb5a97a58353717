"""The one balancer: environments dealt into bins of near-equal measured cost.

Used for which xdist worker owns which environment (session/owners.py) and which environments shard K of N runs
(shards/split.py); both feed it the measured seconds of shards/costs.toml (shards.plan.load_costs). Pure and
deterministic: the same names and costs give the same bins on every machine, whatever order the names come in.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping


def longest_first(names: Iterable[str], bins: int, costs: Mapping[str, float]) -> list[list[str]]:
    """`names` (each once) dealt into `bins` bins, heaviest first, each to the least loaded bin (ties: the lowest
    bin); names of equal cost in name order. A name without a measurement costs the median of the measured ones
    among `names` (1.0 when none is measured). Each bin lists its names in the order they were dealt; more bins than
    names leaves the last ones empty."""
    unique = sorted(set(names))
    known = [costs[n] for n in unique if n in costs]
    default = statistics.median(known) if known else 1.0
    loads = [0.0] * bins
    dealt: list[list[str]] = [[] for _ in range(bins)]
    for name in sorted(unique, key=lambda n: (-costs.get(n, default), n)):
        target = min(range(bins), key=lambda i: (loads[i], i))
        dealt[target].append(name)
        loads[target] += costs.get(name, default)
    return dealt
