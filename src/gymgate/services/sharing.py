"""Which environments share one Gym instance (issue 29): one Gym actor, head server and model server for several
environments, as NeMo RL's NemoGym actor hosts them, each keeping its own agents and resources servers.

What may share is decided from Gym's own configs: two environments whose configs declare a server instance of the
same name never share (Gym merges configs by name: one would silently replace the other's server). The instance's
servers that no member's config declares (the head server, the model server from the model config) are shared;
the rest belong to the member whose config declares them — so a dead server is blamed on its environment
(`Fleet.watch`), and a neighbour's failure never decides another environment's verdict: the neighbours of an
instance that is torn down start again in instances of their own (`Fleet`, runner/path.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Instance:
    """One Gym instance of a run: its member environments (in start order) and each member's own server names."""

    members: list[str]
    own: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The instance's name in the run folder (its log, its scratch dir): its first member's, for one alone."""
        first = self.members[0]
        return first if len(self.members) == 1 else f"{first}+{len(self.members) - 1}"

    @property
    def shared(self) -> bool:
        return len(self.members) > 1

    def servers_of(self, env: str, servers: Sequence[Mapping]) -> list[dict]:
        """The servers of this instance that `env`'s paths depend on: its own and the shared ones."""
        others = frozenset().union(*(names for member, names in self.own.items() if member != env))
        return [dict(s) for s in servers if s.get("name") not in others]


def pack(names: Sequence[str], size: int, servers_of: Callable[[str], frozenset[str]]) -> list[Instance]:
    """`names` dealt into instances of at most `size` environments, first fit in the given order; an environment
    joins an instance only if none of its server names is already there. `size` 1: each alone (Gym's own way)."""
    instances: list[Instance] = []
    for name in names:
        own = servers_of(name)
        for instance in instances:
            taken = frozenset().union(*instance.own.values())
            if len(instance.members) < size and not own & taken:
                instance.members.append(name)
                instance.own[name] = own
                break
        else:
            instances.append(Instance([name], {name: own}))
    return instances
