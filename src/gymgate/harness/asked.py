"""What a judging command asked for, as one typed value: which environments (by name, or a named set), which paths
among theirs, and which paths each kind plans (recordings replayed or not, fault paths, variants). The command line
fills it (gymgate.options.bind); nothing below the command's entry reads the parsed command line."""

from __future__ import annotations

from dataclasses import dataclass

from gymgate.selection import NONE


@dataclass(frozen=True)
class Asked:
    envs: list[str] | None = None  # --env names, settled with --env-set (cases, or servers no case covers)
    env_set: str | None = None
    paths: list[str] | None = None  # --paths: ids, comma lists, @files
    replay: bool = True  # --no-replays: False
    faults: str = NONE
    variants: str = NONE

    def selections(self) -> dict[str, str]:
        """Each kind's selection by the kind's name (gymgate.kinds.plan)."""
        return {"fault": self.faults, "variant": self.variants}
