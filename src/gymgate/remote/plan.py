"""The units a dispatch sends to a cluster. A unit is one ref run alone on one node, the way a CI shard machine runs
it (`accept --gym-ref R --no-baseline [--shard K/N]`), so a ref's run keeps every single-host assumption; the
caller merges shards (shards/merge.py) and compares refs as for local runs. One unit per ref, unless the cluster has
more free slots than refs: then each ref is split into shards to fill them, never more shards than it has
environments (a shard with nothing to run is a usage error)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gymgate.shards.plan import Shard

NAME_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Unit:
    ref: str
    shard: Shard | None = None
    attempt: int = 1  # a unit whose node died runs again elsewhere as attempt 2 (remote/dispatch.py)

    @property
    def name(self) -> str:
        """Its name in the dispatch's namespace (readable in `ray list actors`; unique within a dispatch)."""
        part = f"-{self.shard.index}of{self.shard.count}" if self.shard else ""
        return f"unit-{NAME_SAFE.sub('_', self.ref)[:60]}{part}-a{self.attempt}"

    def argv(self, common: Sequence[str]) -> list[str]:
        """The gymgate command its node runs: the ref judged alone, `common` (environments, workers, …) as given."""
        shard = ["--shard", self.shard.label] if self.shard else []
        return ["accept", "--gym-ref", self.ref, "--no-baseline", *shard, *common]

    def again(self) -> Unit:
        return replace(self, attempt=self.attempt + 1)


def units(refs: Sequence[str], slots: int, environments: int) -> list[Unit]:
    """The units for `refs` on a cluster with `slots` free unit slots (its `gymgate` resource), each ref having
    `environments` environments to run: a ref per unit, or each ref in as many shards as the slots allow."""
    if not refs:
        return []
    per_ref = min(max(environments, 1), max(slots // len(refs), 1))
    if per_ref == 1:
        return [Unit(ref) for ref in refs]
    return [Unit(ref, Shard(k, per_ref)) for ref in refs for k in range(1, per_ref + 1)]
