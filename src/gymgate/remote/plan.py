"""The units a dispatch sends to a cluster. A unit is one ref run on one node, the way a CI shard machine runs it, so
a ref's run keeps every single-host assumption; the caller merges shards (shards/merge.py) and compares refs as for
local runs. A ref of several (a bump, a matrix) runs the paths all of them plan — every ref's recordings — as
`matrix --only R <refs>` does, so its run is the one a local run of the same command makes. One unit per ref; a
ref asked alone is split into shards when the cluster has spare slots (`accept --shard K/N`), never more shards
than it has environments (a shard with nothing to run is a usage error)."""

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
    among: tuple[str, ...] = ()  # every ref of the command (a bump's two, a matrix's): their recordings are replayed

    @property
    def name(self) -> str:
        """Its name in the dispatch's namespace (readable in `ray list actors`; unique within a dispatch)."""
        part = f"-{self.shard.index}of{self.shard.count}" if self.shard else ""
        return f"unit-{NAME_SAFE.sub('_', self.ref)[:60]}{part}-a{self.attempt}"

    def argv(self, common: Sequence[str]) -> list[str]:
        """The gymgate command its node runs, `common` (environments, workers, …) as given: the ref judged alone,
        with the paths every ref of the command plans when there are several."""
        if len(self.among) > 1:
            return ["matrix", "--only", self.ref, *self.among, *common]
        shard = ["--shard", self.shard.label] if self.shard else []
        return ["accept", "--gym-ref", self.ref, "--no-baseline", *shard, *common]

    def again(self) -> Unit:
        return replace(self, attempt=self.attempt + 1)

    def to_json(self) -> dict:
        shard = self.shard.label if self.shard else ""
        return {"ref": self.ref, "shard": shard, "attempt": self.attempt, "among": list(self.among)}

    @classmethod
    def from_json(cls, data: dict) -> Unit:
        shard = Shard.parse(data["shard"]) if data.get("shard") else None
        return cls(data["ref"], shard, int(data.get("attempt", 1)), tuple(data.get("among", ())))


def units(refs: Sequence[str], slots: int, environments: int) -> list[Unit]:
    """The units for `refs` on a cluster with `slots` free unit slots (its `gymgate` resource), each ref having
    `environments` environments to run: a ref per unit; one ref alone in as many shards as the slots allow."""
    among = tuple(refs) if len(refs) > 1 else ()
    if len(refs) != 1 or min(environments, slots) <= 1:
        return [Unit(ref, among=among) for ref in refs]
    count = min(environments, slots)
    return [Unit(refs[0], Shard(k, count)) for k in range(1, count + 1)]
