"""Forking Gym's servers and the Gym actors' Ray workers from pre-imported parents (issue 29): the zygote that forks
them (zygote.py; what each zygote imports and compares: preload.toml), a run's zygotes started and stopped
(service.py), the client a server's venv runs as its `python` (client.py), and the venv that puts that client where
Gym and Ray look for an interpreter (venv.py).

On by default; GYMGATE_LAUNCHER=exec is Gym's own start-up, exactly: every server a fresh interpreter, Gym's 3 s
between readiness checks (how the two were shown to give the same results: docs/architecture.md, "Starting Gym's
servers")."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.options import LAUNCHER

MODE_VARIABLE = LAUNCHER.var  # declared with the other settings (gymgate.options)
FORK, EXEC = LAUNCHER.choices
MODES = LAUNCHER.choices


def mode() -> str:
    """The launcher this run uses (checked_mode refuses a value outside MODES)."""
    return os.environ.get(MODE_VARIABLE) or FORK


def checked_mode() -> str:
    """mode(), refused with a usage error when it is not one of MODES (the CLI asks first; the run's start again)."""
    return LAUNCHER.value()


def enabled() -> bool:
    return mode() == FORK


@dataclass(frozen=True)
class ZygoteSpec:
    """One zygote a run starts (preload.toml): what it imports itself (after the shared stage), the environment those
    imports read, the values it imports with unless the run sets them, and what it must never import."""

    name: str
    modules: tuple[str, ...]
    environment: tuple[str, ...]
    dynamic: frozenset[str]
    defaults: dict[str, str] = field(default_factory=dict)
    never: frozenset[str] = frozenset()

    def read_at_import(self, environ: dict[str, str]) -> dict[str, str]:
        """The part of `environ` that this zygote's preloading or interpreter start-up reads: a forked process is
        what a fresh one would have been only when this part is the same."""
        return {
            k: v
            for k, v in environ.items()
            if k not in self.dynamic and any(fnmatch.fnmatchcase(k, p) for p in self.environment)
        }


@dataclass(frozen=True)
class SharedStage:
    """What the zygotes' common parent imports once before it forks them (preload.toml `shared`), and the modules
    that must not come with it: every zygote inherits them, whatever its own `defaults` and `allows`."""

    modules: tuple[str, ...]
    forbidden: frozenset[str]


def _declared() -> dict:
    return tomllib.loads(Path(__file__).with_name("preload.toml").read_text())


def shared() -> SharedStage:
    declared = _declared()
    return SharedStage(tuple(declared["shared"]), frozenset(declared["pooled"]) | frozenset(declared["never"]))


def zygotes() -> dict[str, ZygoteSpec]:
    """Each zygote a run starts, in the order a process tries them."""
    declared = _declared()
    specs = {}
    for name, own in declared["zygotes"].items():
        specs[name] = ZygoteSpec(
            name=name,
            modules=(*declared["modules"], *own.get("modules", [])),
            environment=(*declared["environment"], *own.get("environment", [])),
            dynamic=frozenset(declared["dynamic"]),
            defaults=dict(own.get("defaults", {})),
            never=frozenset(declared["never"]) - set(own.get("allows", [])),
        )
    return specs
