"""Known defects: variants a release's verifier is reviewed to get wrong (cases/variants/known.toml). A variant
that disagrees with its original exactly as an entry says, on a Gym version the entry names, passes its run judged
alone (the finding is on record, not news: a run of that release is not red for it, and its clean run is cached);
it stays a disagreement to every comparison (gymgate.verdict.label), so a bump that fixes it is fixed and one that
brings it is regressed, whatever the file says.

An entry names its paths (globs: `math_with_judge:form.boxed_last_number.*`), the verdict fields whose
disagreement it covers (a disagreement on any other field is news), optionally the values the variant comes to on
them (`variant`: the defect's direction, e.g. reward 0 — a variant wrong another way is news), the Gym versions it
holds on (none: every one) and a reason (an entry without one covers nothing, like an ack). The file is checked
whole before a run starts (`defects`): a malformed entry is a usage error, never a path's verdict."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from gymgate import reviewed
from gymgate.errors import UsageError
from gymgate.locations import repo_root

KEYS = {"paths", "fields", "variant", "gyms", "reason"}


def known_file() -> Path:
    return repo_root() / "cases" / "variants" / "known.toml"


@dataclass(frozen=True)
class Defect:
    paths: tuple[str, ...]
    fields: tuple[str, ...]
    reason: str
    gyms: tuple[str, ...] = ()
    variant: dict[str, Any] = field(default_factory=dict, hash=False)  # the variant's values the defect gives

    def covers(self, path: str, gym: str, fields: list[str], got: dict[str, Any]) -> bool:
        return (
            reviewed.holds(self.paths, self.reason, self.gyms, path, gym)
            and set(fields) <= set(self.fields)
            and all(got.get(k) == v for k, v in self.variant.items())
        )

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "fields": list(self.fields), "gyms": list(self.gyms)}


@cache
def defects(file: Path | None = None) -> tuple[Defect, ...]:
    """Every entry of the file, checked: lists of strings where lists are due, a reason, no unknown key."""
    file = file or known_file()
    if not file.is_file():
        return ()
    try:
        data = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{file}: not TOML ({exc})") from None
    return tuple(_defect(file, n, raw) for n, raw in enumerate(data.get("defect", []), 1))


def _defect(file: Path, number: int, raw: Any) -> Defect:
    def strings(key: str, required: bool) -> tuple[str, ...]:
        value = raw.get(key, [] if not required else None)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or (required and not value):
            problems.append(f"`{key}` must be a{' non-empty' if required else ''} list of strings")
            return ()
        return tuple(value)

    if not isinstance(raw, dict):
        raise UsageError(f"{file}: [[defect]] {number} is not a table")
    problems = [f"unknown key `{k}`" for k in sorted(set(raw) - KEYS)]
    paths, fields, gyms = strings("paths", True), strings("fields", True), strings("gyms", False)
    reason, pinned = raw.get("reason"), raw.get("variant", {})
    if not isinstance(reason, str) or not reason.strip():
        problems.append("`reason` must say why (an entry without one covers nothing)")
    if not isinstance(pinned, dict) or not set(pinned) <= set(fields):
        problems.append("`variant` must be a table of some of its `fields` and the values the variant comes to")
    if problems:
        raise UsageError(f"{file}: [[defect]] {number}: {'; '.join(problems)}")
    return Defect(paths, fields, str(reason), gyms, dict(pinned))


def known(path: str, gym: str, fields: list[str], got: dict[str, Any]) -> Defect | None:
    """The reviewed entry that covers this variant's disagreement on these fields (its values `got`) on this Gym
    version, if any."""
    return next((d for d in defects() if d.covers(path, gym, fields, got)), None)
