"""The record a resolved ref becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# How a ref was given; decides how its environment project names nemo-gym.
KIND_PIN = "pin"  # a committed file in pins/
KIND_INDEX = "index"  # a version on the package index with no pin yet
KIND_WHEEL = "wheel"  # a local wheel file
KIND_TREE = "tree"  # a local source checkout
KIND_GIT = "git"  # a commit in a Gym git repository, exported to a tree


@dataclass(frozen=True)
class GymSource:
    """One concrete Gym: everything that decides which code runs, and its content hash.

    ``name`` is what reports and directories call it; ``digest`` changes whenever the code does
    (artifact SHA256, tree content hash or commit SHA), so two mutants of one version differ.
    """

    name: str
    kind: str
    version: str
    requires_python: str
    digest: str
    origin: str
    path: Path | None = None
    commit: str | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def pinned(self) -> bool:
        return self.kind == KIND_PIN

    def describe(self) -> str:
        label = {
            KIND_PIN: "pin",
            KIND_INDEX: "unpinned index version",
            KIND_WHEEL: "local wheel",
            KIND_TREE: "local checkout",
            KIND_GIT: "git commit",
        }[self.kind]
        named = f" ({self.extra['ref_kind']} {self.extra['ref']})" if self.extra.get("ref") else ""
        where = f" {self.commit}{named} in {self.origin}" if self.commit else f" from {self.origin}"
        yanked = f", yanked on the index: {self.extra['yanked']}" if self.extra.get("yanked") else ""
        digest = "" if self.commit else f", sha256:{self.digest[:12]}"
        return f"nemo-gym {self.version} ({label}{where}{digest}{yanked})"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "version": self.version,
            "requires_python": self.requires_python,
            "digest": self.digest,
            "origin": self.origin,
            "path": str(self.path) if self.path else None,
            "commit": self.commit,
            "pinned": self.pinned,
            "extra": dict(self.extra),
        }


def nemo_gym_label(source: dict[str, object]) -> str | None:
    """How reports name a git ref's Gym (a stored source.json): commit, subject and version, instead of the path its
    lock names the checkout by; None for every other kind (their lock names them well)."""
    if source.get("kind") != KIND_GIT or not source.get("commit"):
        return None
    extra = source.get("extra") or {}
    subject = f' "{extra["subject"]}"' if isinstance(extra, dict) and extra.get("subject") else ""
    named = f" {extra['ref']} =" if isinstance(extra, dict) and extra.get("ref") else ""
    return f"{source.get('version')} (git{named} {str(source['commit'])[:12]}{subject})"
