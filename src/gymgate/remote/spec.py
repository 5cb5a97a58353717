"""A unit's spec: one `run_ref` call (harness/run.py) as data — the ref, the paths, the run options (recordings to
replay and per-path deadlines included), the run id — plus what the caller expects the node's environment to be.
The node resolves the ref itself and builds its environment from the committed lock; a ref whose content differs,
a lock or an interpreter other than the caller's, is refused: its run would not be the one the caller asked for."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gymgate.errors import InfraError, UsageError
from gymgate.refs.source import KIND_INDEX, KIND_PIN, GymSource

SHIPPED_KINDS = (KIND_PIN, KIND_INDEX)  # refs a node resolves to the same bytes by their name alone


class RefusedUnit(InfraError):
    """The node's inputs are not the caller's: never run, never a verdict (the caller reports the run unjudged)."""


@dataclass(frozen=True)
class UnitSpec:
    source: dict[str, Any]  # GymSource.to_json() as the caller resolved it
    expected: list[str]
    options: dict[str, Any]  # RunOptions.to_json()
    run_id: str
    narrowed: bool = False
    # What the caller expects of the node's environment: the lock's SHA256 ("" when the caller has not locked the
    # project itself: the node locks it, as the caller would) and the interpreter's version ("" when the caller has
    # none that satisfies the ref: the node provides one as it would locally).
    lock_sha256: str = ""
    python: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UnitSpec:
        return cls(**data)

    @classmethod
    def read(cls, path: Path) -> UnitSpec:
        try:
            return cls.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"{path}: not a unit spec ({exc})") from None

    def resolved(self) -> GymSource:
        """The ref as this node resolves it by name, refused unless it is the caller's (same content digest)."""
        from gymgate.refs import resolve_ref

        source = resolve_ref(str(self.source["name"]), None)
        if source.digest != self.source["digest"]:
            raise RefusedUnit(
                f"refused: {source.name} resolves here to sha256:{source.digest[:12]}, the caller's is "
                f"sha256:{str(self.source['digest'])[:12]}"
            )
        return source

    def admit(self, env) -> None:
        """Refuse an environment whose lock or interpreter is not the caller's (envs/sync.SyncedEnv)."""
        lock = hashlib.sha256((env.project / "uv.lock").read_bytes()).hexdigest()
        if self.lock_sha256 and lock != self.lock_sha256:
            raise RefusedUnit(
                f"refused: the lock of {self.source['name']} here is sha256:{lock[:12]}, the caller expects "
                f"sha256:{self.lock_sha256[:12]}"
            )
        if self.python and env.interpreter.version != self.python:
            raise RefusedUnit(
                f"refused: this node provides Python {env.interpreter.version} for {self.source['name']}, the caller "
                f"expects {self.python} (install it on the node, or give the caller the node's)"
            )


def shippable(source: GymSource) -> None:
    """A ref a cluster can run: one each node resolves to the same bytes by its name. A local checkout, a wheel
    or a git commit would have to travel with the checkout: refused with a clear error, for now."""
    if source.kind not in SHIPPED_KINDS:
        raise UsageError(
            f"{source.name} is a {source.describe()}: a cluster run (--ray-address) takes pins and package-index "
            "versions, which every node resolves by name; run this ref here (without --ray-address)"
        )
