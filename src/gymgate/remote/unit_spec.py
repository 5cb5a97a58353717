"""A unit's spec: one `run_ref` call (harness/executor.py) as data — the ref, the paths, the run options (recordings to
replay and per-path deadlines included), the run id — plus what the caller expects the node's environment to be.
The node resolves a pin or an index version by its name; a local tree, a git commit or a wheel travels as a pack
named by its digest (`payload`). The node builds the environment itself; a ref whose content differs, a lock or an
interpreter other than the caller's, is refused: its run would not be the one the caller asked for."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gymgate.errors import InfraError, UsageError
from gymgate.refs import resolve_ref
from gymgate.refs.local import sha256_file, tree_files
from gymgate.refs.source import KIND_GIT, KIND_INDEX, KIND_PIN, KIND_WHEEL, GymSource
from gymgate.remote.node import pack

NAMED_KINDS = (KIND_PIN, KIND_INDEX)  # refs a node resolves to the same bytes by their name alone; the rest travel


class RefusedUnit(InfraError):
    """The node's inputs are not the caller's: never run, never a verdict (the caller reports the run unjudged)."""


@dataclass(frozen=True)
class UnitSpec:
    source: dict[str, Any]  # GymSource.to_json() as the caller resolved it
    expected: list[str]
    options: dict[str, Any]  # RunOptions.to_json()
    run_id: str
    narrowed: bool = False
    # What the caller expects of the node's environment: a pin's committed lock's SHA256 ("" for a generated
    # project: the node locks its own, as the caller does) and the interpreter's version ("" when the caller has
    # none that satisfies the ref: the node provides one as it would locally).
    lock_sha256: str = ""
    python: str = ""
    payload: str = ""  # the digest of the packed Gym source, for a ref a node cannot resolve by name
    source_path: str = ""  # where the node unpacked it (the node fills it in)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UnitSpec:
        return cls(**data)

    def resolved(self) -> GymSource:
        """The ref as this node resolves it (by name, or from the pack it was sent), refused unless it is the
        caller's (the same content digest)."""

        kind, where = self.source["kind"], Path(self.source_path)
        if kind in NAMED_KINDS:
            source = resolve_ref(str(self.source["name"]), None)
        elif not self.source_path:
            raise RefusedUnit(f"refused: {self.source['name']} was to come as a pack and did not")
        elif kind == KIND_WHEEL:
            source = resolve_ref(str(where / Path(str(self.source["path"])).name), None)
        elif kind == KIND_GIT:  # the commit's tree, checked against its pack's digest as it was unpacked
            known = {k: v for k, v in self.source.items() if k not in ("path", "pinned")}
            return GymSource(**{**known, "path": where})
        else:
            source = resolve_ref(str(where), None)
        if source.digest != self.source["digest"]:
            raise RefusedUnit(
                f"refused: {source.name} resolves here to sha256:{source.digest[:12]}, the caller's is "
                f"sha256:{str(self.source['digest'])[:12]}"
            )
        return source

    def admit(self, env) -> None:
        """Refuse an environment whose lock or interpreter is not the caller's (envs/sync.SyncedEnv)."""
        lock = sha256_file(env.project / "uv.lock")
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


def source_pack(source: GymSource) -> tuple[str, bytes] | None:
    """A ref a node cannot resolve by name, as one pack and its digest (a tree's files as its content digest counts
    them, a wheel's one file); None for pins and index versions."""

    if source.kind in NAMED_KINDS or source.path is None:
        return None
    if source.kind == KIND_WHEEL:
        return pack(source.path.parent, [source.path.name])
    return pack(source.path, [name.as_posix() for name in tree_files(source.path)])


@dataclass(frozen=True)
class LoadUnitSpec:
    """A load unit: both refs of a comparison on one node (the interleaving cancels one node's drift, not two
    nodes' difference), measured under load for a share of the environments; the caller judges. Each side is a
    run's spec as above (its ref resolved or unpacked, and refused, the same way)."""

    sides: dict[str, dict[str, Any]]  # side (load/measures.SIDES) -> UnitSpec.to_json()
    envs: list[str]
    options: dict[str, Any]  # RunOptions.to_json(): the plan (what each environment replays), the session's bounds

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoadUnitSpec:
        return cls(**data)

    def side(self, name: str) -> UnitSpec:
        return UnitSpec.from_json(self.sides[name])


def read_spec(path: Path) -> UnitSpec | LoadUnitSpec:
    """A unit's spec as its node reads it: a run of one ref, or a load unit (it has `sides`)."""
    try:
        data = json.loads(path.read_text())
        return LoadUnitSpec.from_json(data) if "sides" in data else UnitSpec.from_json(data)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"{path}: not a unit spec ({exc})") from None
