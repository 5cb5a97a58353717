"""Known defects: variants a release's verifier is reviewed to get wrong (cases/variants/known.toml). A variant
that disagrees with its original exactly as an entry says, on a Gym version the entry names, passes its run judged
alone (the finding is on record, not news: a run of that release is not red for it, and its clean run is cached);
it stays a disagreement to every comparison (gymgate.verdict.label), so a bump that fixes it is fixed and one that
brings it is regressed, whatever the file says.

An entry names its paths (globs: `math_with_judge:form.boxed_last_number.*`), the verdict fields whose
disagreement it covers (a disagreement on any other field is news), the Gym versions it holds on (none: every one)
and a reason (an entry without one covers nothing, like an ack)."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gymgate.errors import UsageError
from gymgate.locations import repo_root


def known_file() -> Path:
    return repo_root() / "cases" / "variants" / "known.toml"


@dataclass(frozen=True)
class Defect:
    paths: tuple[str, ...]
    fields: tuple[str, ...]
    reason: str
    gyms: tuple[str, ...] = ()

    def covers(self, path: str, gym: str, fields: list[str]) -> bool:
        return (
            bool(self.reason.strip())
            and any(fnmatch.fnmatchcase(path, p) for p in self.paths)
            and (not self.gyms or gym in self.gyms)
            and set(fields) <= set(self.fields)
        )

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "fields": list(self.fields), "gyms": list(self.gyms)}


@cache
def defects(file: Path | None = None) -> tuple[Defect, ...]:
    file = file or known_file()
    if not file.is_file():
        return ()
    try:
        data = tomllib.loads(file.read_text())
        return tuple(
            Defect(tuple(d["paths"]), tuple(d["fields"]), d.get("reason", ""), tuple(d.get("gyms", ())))
            for d in data.get("defect", [])
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise UsageError(f"{file}: not a list of [[defect]] entries with paths and fields ({exc})") from None


def known(path: str, gym: str, fields: list[str]) -> Defect | None:
    """The reviewed entry that covers this variant's disagreement on these fields on this Gym version, if any."""
    return next((d for d in defects() if d.covers(path, gym, fields)), None)
