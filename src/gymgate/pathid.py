"""A rollout path's id, `<environment>:<name>` (e.g. `mcqa:accepted`, or `mcqa:rec.3f2a9c1b0d` for a recorded
rollout replayed): parsed and formatted here only. The name is called `mode` for history: a hand-written case's
two paths are its modes.

Which kind a name is of, which path it derives from and its parts (a fault's, a form's) follow the grammar each
kind declares in pathkinds.toml, read here; nothing else takes a name apart.

A PathId is a str, so records, run marks, deadlines and reports keep writing the plain id; everything that needs
its environment, mode, kind or original, or its file name, asks it instead of splitting the text.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DECLARED = Path(__file__).with_name("pathkinds.toml")
ORIGINAL = "original"  # the template field that holds the name of the path a path derives from
_FIELD = re.compile(r"\{(?P<field>[a-z_]+)\}")


@dataclass(frozen=True)
class KindNames:
    """A kind of path as names show it (pathkinds.toml): its templates, the path its paths derive from, what the
    report calls all of an environment's paths of the kind, and the module its behaviour lives in."""

    name: str
    names: tuple[str, ...]
    original: str = ""
    together: str = ""
    section: str = ""
    behaviour: str = ""
    under_load: bool = False  # its paths are rolled out concurrently in load runs (gymgate.load)

    @property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return _patterns(self.names)

    def parts(self, mode: str) -> dict[str, str] | None:
        """The fields of `mode` when it is a name of this kind, else None."""
        for pattern in self.patterns:
            found = pattern.fullmatch(mode)
            if found:
                return found.groupdict()
        return None

    def format(self, **fields: str) -> str:
        """The name of this kind with these fields: the one template they fill exactly (a kind of fixed names, as the
        hand-written one, is named by PathId.of)."""
        filled = [t for t in self.names if {m.group("field") for m in _FIELD.finditer(t)} == set(fields)]
        if len(filled) != 1:
            raise ValueError(f"no one {self.name} path is named by fields {sorted(fields)} ({', '.join(self.names)})")
        return _FIELD.sub(lambda m: fields[m.group("field")], filled[0])


@cache
def _patterns(templates: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(_pattern(t) for t in templates)


def _pattern(template: str) -> re.Pattern[str]:
    out, at = [], 0
    for field in _FIELD.finditer(template):
        out.append(re.escape(template[at : field.start()]))
        name = field.group("field")
        out.append(f"(?P<{name}>.+)" if name == ORIGINAL else f"(?P<{name}>[^.:\\s-]+)")
        at = field.end()
    out.append(re.escape(template[at:]))
    return re.compile("".join(out))


@cache
def kinds() -> tuple[KindNames, ...]:
    """Every declared kind, in plan order."""
    declared = tomllib.loads(DECLARED.read_text())["kind"]
    return tuple(KindNames(**{**entry, "names": tuple(entry["names"])}) for entry in declared)


def sections() -> tuple[str, ...]:
    """The record sections the kinds declare, in declaration order: the keys a path record holds for them."""
    return tuple(k.section for k in kinds() if k.section)


def kind_named(name: str) -> KindNames:
    for kind in kinds():
        if kind.name == name:
            return kind
    raise ValueError(f"no kind of path is named {name!r} ({', '.join(k.name for k in kinds())})")


def kind_of_name(mode: str) -> KindNames:
    """The kind whose grammar `mode` follows; a name no kind declares is an error, never a guess."""
    for kind in kinds():
        if kind.parts(mode) is not None:
            return kind
    raise ValueError(f"{mode!r} is the name of no kind of path ({'; '.join(' '.join(k.names) for k in kinds())})")


MODES = kinds()[0].names  # what a hand-written case's two paths do: earn the top reward, or not
_ID = re.compile(r"^[^:\s]+:[^:\s-]+$")  # any environment and name (no '-': a record's file stem splits there)
_IN_NODE = re.compile(r"\[(?P<id>[A-Za-z0-9_.-]+:[A-Za-z0-9_.]+)\]$")


class PathId(str):
    __slots__ = ()

    def __new__(cls, text: str) -> PathId:
        if isinstance(text, PathId):
            return text
        if not _ID.match(text):
            raise ValueError(f"not a path id: {text!r} (paths look like mcqa:accepted)")
        return super().__new__(cls, text)

    @classmethod
    def of(cls, env: str, mode: str) -> PathId:
        return cls(f"{env}:{mode}")

    @classmethod
    def in_node(cls, nodeid: str) -> PathId | None:
        """The path id a pytest item's node id carries in its brackets (`…[mcqa:accepted]`), if any."""
        found = _IN_NODE.search(nodeid)
        return cls(found.group("id")) if found else None

    @classmethod
    def from_stem(cls, stem: str) -> PathId:
        """The path id a record's file name (its stem) stands for."""
        env, _, mode = stem.rpartition("-")
        return cls.of(env or stem, mode if env else "unknown")

    @property
    def env(self) -> str:
        return self.split(":", 1)[0]

    @property
    def mode(self) -> str:
        return self.split(":", 1)[1]

    @classmethod
    def named(cls, env: str, kind: str, **fields: str) -> PathId:
        """The id of a path of `kind` with these fields (e.g. named("mcqa", "fault", fault="policy_500_once"))."""
        return cls.of(env, kind_named(kind).format(**fields))

    @property
    def kind(self) -> KindNames:
        return kind_of_name(self.mode)

    def part(self, field: str) -> str:
        """One field of the name (a fault's `fault`, a variant's `form`); "" when its kind has no such field."""
        return (self.kind.parts(self.mode) or {}).get(field) or ""

    @property
    def original(self) -> PathId | None:
        """The path this one derives from (a fault path's accepted path, a variant's original), or None."""
        kind = self.kind
        name = kind.original or (kind.parts(self.mode) or {}).get(ORIGINAL)
        return PathId.of(self.env, name) if name else None

    @property
    def stem(self) -> str:
        """The file name a path's record is stored under (paths/<stem>.json)."""
        return f"{self.env}-{self.mode}"


def both(envs: list[str]) -> list[PathId]:
    """Both paths of each environment, in order."""
    return [PathId.of(env, mode) for env in envs for mode in MODES]


def environments(paths: list[str]) -> list[str]:
    """The environments of these paths, each once, sorted."""
    return sorted({PathId(p).env for p in paths})
