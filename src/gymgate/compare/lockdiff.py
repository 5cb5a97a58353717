"""What a bump changes underneath: the package diff between two uv.lock files (a Gym bump is usually a
lock bump). Python, Ray, openai, fastapi and pydantic are highlighted; so is nemo-gym itself."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

HIGHLIGHTED = ("python", "nemo-gym", "ray", "openai", "fastapi", "pydantic")


@dataclass
class LockDiff:
    added: dict[str, str] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)
    upgraded: dict[str, tuple[str, str]] = field(default_factory=dict)
    downgraded: dict[str, tuple[str, str]] = field(default_factory=dict)
    replaced: dict[str, tuple[str, str]] = field(default_factory=dict)  # not comparable as versions (a checkout)
    highlighted: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.upgraded or self.downgraded or self.replaced)


def packages(lock: Path, checkout: str | None = None) -> dict[str, str]:
    """name -> version of every locked package (the project itself and editable/virtual entries excluded, except
    an editable nemo-gym: a checkout under test, shown as `checkout` says, else by its path), plus `python` for the
    lock's requires-python."""
    data = tomllib.loads(lock.read_text())
    found = {"python": data.get("requires-python", "")}
    for package in data.get("package", []):
        source = package.get("source", {})
        if package["name"] == "nemo-gym" and "editable" in source:
            found["nemo-gym"] = checkout or f"checkout {source['editable']}"
            continue
        if "virtual" in source or "editable" in source:
            continue
        found[package["name"]] = package.get("version", "")
    return found


def _newer(a: str, b: str) -> bool | None:
    """Whether b is newer than a; None when either is not a version (a checkout)."""
    try:
        return Version(b) > Version(a)
    except InvalidVersion:
        return None


def diff(baseline: Path, candidate: Path, checkouts: tuple[str | None, str | None] = (None, None)) -> LockDiff:
    """`checkouts`: how to name each side's nemo-gym when its lock holds a checkout (a git commit's label)."""
    old, new = packages(baseline, checkouts[0]), packages(candidate, checkouts[1])
    result = LockDiff()
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        if a is None:
            result.added[name] = b
        elif b is None:
            result.removed[name] = a
        elif (newer := _newer(a, b)) is None:
            result.replaced[name] = (a, b)
        elif newer:
            result.upgraded[name] = (a, b)
        else:
            result.downgraded[name] = (a, b)
        if name in HIGHLIGHTED:
            result.highlighted[name] = (a, b)
    return result
