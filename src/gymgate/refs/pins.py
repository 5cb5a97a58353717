"""The committed pin files: pins/<name>.toml, plus pins/defaults.toml naming the baseline."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.version import InvalidVersion, Version

from gymgate.errors import InfraError
from gymgate.locations import pins_dir
from gymgate.refs.source import KIND_PIN, GymSource

DEFAULTS_FILE = "defaults.toml"
PIN_FIELDS = ("name", "version", "requires-python")


def known_pins(directory: Path | None = None) -> list[str]:
    directory = directory or pins_dir()
    return sorted(p.stem for p in directory.glob("*.toml") if p.name != DEFAULTS_FILE)


def pins_in_order(directory: Path | None = None) -> list[str]:
    """Every pin, oldest version first (the matrix's default order)."""

    def key(name: str) -> tuple[int, Version | str]:
        try:
            return (0, Version(name))
        except InvalidVersion:
            return (1, name)

    return sorted(known_pins(directory), key=key)


def load_pin(name: str, directory: Path | None = None) -> GymSource | None:
    """The pin called ``name``, or None when no such file exists."""
    path = (directory or pins_dir()) / f"{name}.toml"
    if not path.is_file() or path.name == DEFAULTS_FILE:
        return None
    data = tomllib.loads(path.read_text())
    missing = [f for f in PIN_FIELDS if f not in data] + (
        [] if "sha256" in data.get("artifact", {}) else ["artifact.sha256"]
    )
    if missing:
        raise InfraError(f"pin file {path} lacks {', '.join(missing)}")
    if data["name"] != name:
        raise InfraError(f"pin file {path} names itself {data['name']!r}; rename the file or fix the field")
    return GymSource(
        name=name,
        kind=KIND_PIN,
        version=data["version"],
        requires_python=data["requires-python"],
        digest=data["artifact"]["sha256"],
        origin="index",
        extra={
            "filename": data["artifact"].get("filename", ""),
            **{f"sdist_{k}": str(v) for k, v in data.get("sdist", {}).items() if k in ("filename", "sha256")},
        },
    )


def defaults(directory: Path | None = None) -> dict[str, str]:
    path = (directory or pins_dir()) / DEFAULTS_FILE
    return tomllib.loads(path.read_text()) if path.is_file() else {}


def baseline_pin(directory: Path | None = None) -> str:
    name = defaults(directory).get("baseline")
    if not name:
        raise InfraError(f"{(directory or pins_dir()) / DEFAULTS_FILE} names no baseline")
    return name
