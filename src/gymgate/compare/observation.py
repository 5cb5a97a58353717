"""Everything a bump changed on a path that passes on both refs: the two full observations (every request the model
received, everything Gym returned) are flattened to dotted leaves, normalized by the one declared nondeterminism
list (nondeterministic.toml), and diffed. Each difference is a *contract* change (the model or RL training sees it:
it fails the gate until acknowledged) or an *additive* one (a new key in a result object or training item).

The classification fails closed: a removed, changed or retyped leaf is contract; so is anything in the requests
(a parameter that appears is as much a change of what the model receives as one that vanishes) and any new element
of a list (a new output item, message or turn). Only a new key in a dict of Gym's result that existed on both
sides is additive.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gymgate.runfolder.record import REQUESTS, RESULT
from gymgate.text import excerpt, first_difference

RULES_FILE = Path(__file__).with_name("nondeterministic.toml")
CONTRACT, ADDITIVE = "contract", "additive"
ABSENT = "<absent>"  # the leaf does not exist on that side


@dataclass(frozen=True)
class Rule:
    name: str
    path: str
    match: str
    why: str
    within: bool = False  # the rule rewrites what `match` finds inside the value (a port in a message), no more

    def applies(self, field: str, value: Any) -> bool:
        if not fnmatch.fnmatchcase(field, self.path):
            return False
        if self.within:
            return isinstance(value, str) and re.search(self.match, value) is not None
        return not self.match or (isinstance(value, str) and re.fullmatch(self.match, value) is not None)

    def normalized(self, value: Any) -> Any:
        return re.sub(self.match, f"<{self.name}>", value) if self.within else f"<{self.name}>"


@cache
def rules(path: Path = RULES_FILE) -> tuple[Rule, ...]:
    data = tomllib.loads(path.read_text())
    return tuple(
        Rule(r["name"], r["path"], r.get("match", ""), r["why"], r.get("within", False)) for r in data.get("rule", [])
    )


@dataclass
class Change:
    """One leaf that differs. `before`/`after` are the normalized values (ABSENT when the leaf is missing)."""

    field: str
    before: Any
    after: Any
    kind: str  # CONTRACT | ADDITIVE
    ack: str = ""  # the reason of the acknowledgement that covers it, if any
    ack_file: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """What an acknowledgement matches: the field and the exact values on both sides (by digest)."""
        return self.field, value_digest(self.before), value_digest(self.after)


def value_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def flatten(value: Any, declared: tuple[Rule, ...] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """(leaves, nodes) of a normalized copy of `value`: nested dicts and lists become `a.0.b` paths. A list of
    scalars (token ids, logprobs) is one leaf; so is an empty dict or list, so its presence counts. `nodes` holds
    every node, leaves and containers, by path (a whole request or output item that appears is shown as one)."""
    leaves: dict[str, Any] = {}
    nodes: dict[str, Any] = {}

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, dict) and node:
            out: Any = {key: walk(inner, _join(path, key)) for key, inner in node.items()}
        elif isinstance(node, list) and node and not _scalars(node):
            out = [walk(inner, _join(path, index)) for index, inner in enumerate(node)]
        else:
            rule = next((r for r in declared if r.applies(path, node)), None)
            out = leaves[path] = rule.normalized(node) if rule else node
        nodes[path] = out
        return out

    walk(value, "")
    return leaves, nodes


def reviewed_rules(*fidelities: dict[str, Any]) -> tuple[Rule, ...]:
    """The leaves of Gym's result a reviewed classification names as Gym's own nondeterminism for one replayed path
    (its record's `fidelity.masks`, written by acceptance/checks.check_recording from cases/recordings/
    fidelity.toml): compared neither between its attempts nor across refs."""
    masks = sorted({m for f in fidelities for m in (f or {}).get("masks", [])})
    why = "cases/recordings/fidelity.toml"
    return tuple(
        Rule("reviewed nondeterminism", f"{RESULT}.{m}{deeper}", "", why) for m in masks for deeper in ("", ".*")
    )


def _join(path: str, step: Any) -> str:
    return f"{path}.{step}" if path else str(step)


_SCALAR = (type(None), str, int, float, bool)  # a leaf of an observation (and instances of their subclasses)
_SCALAR_TYPES = frozenset(_SCALAR)


def _scalars(values: list) -> bool:
    """Every item is a scalar: a token-id or logprob list is one leaf. The exact types are collected first, at C
    speed (asking each item: judging a 143-path run's attempts took 2.5 CPU-s instead of 1.9); subclasses after."""
    return set(map(type, values)) <= _SCALAR_TYPES or all(isinstance(v, _SCALAR) for v in values)


def diff(before: dict[str, Any], after: dict[str, Any], declared: tuple[Rule, ...] | None = None) -> list[Change]:
    """Every difference of two observations after normalization, classified (module docstring). A subtree that
    exists on one side only (a new request, a dropped output item) is one change at its root."""
    declared = rules() if declared is None else declared
    (left, left_nodes), (right, right_nodes) = flatten(before, declared), flatten(after, declared)

    def top(name: str) -> str:
        steps = name.split(".")
        for end in range(1, len(steps) + 1):
            prefix = ".".join(steps[:end])
            if prefix not in left_nodes and prefix not in right_nodes:
                continue  # not a node (a key with a dot in it)
            if prefix not in left_nodes or prefix not in right_nodes or prefix in left or prefix in right:
                return prefix  # absent on one side, or a leaf on one side and a container on the other
        return name

    found: dict[str, Change] = {}
    for name in sorted(set(left) | set(right), key=_order):
        if name in left and name in right:
            old, new = left[name], right[name]
            if old == new and type(old) is type(new):
                continue
        else:
            name = top(name)
            if name in found:
                continue
            old, new = left_nodes.get(name, ABSENT), right_nodes.get(name, ABSENT)
        found[name] = Change(name, old, new, _kind(name, old, left_nodes))
    return list(found.values())


def _kind(name: str, old: Any, nodes: dict[str, Any]) -> str:
    if old is not ABSENT or name == REQUESTS or name.startswith(REQUESTS + "."):
        return CONTRACT
    parent = name
    while "." in parent:
        parent = parent.rsplit(".", 1)[0]
        if parent in nodes:
            return ADDITIVE if isinstance(nodes[parent], dict) else CONTRACT
    return ADDITIVE if isinstance(nodes.get(""), dict) else CONTRACT


def _order(field: str) -> list[tuple[int, int | str]]:
    """Dotted paths in document order: numeric steps compare as numbers (turn 10 after turn 9)."""
    return [(0, int(step)) if step.isdigit() else (1, step) for step in field.split(".")]


def side_by_side(value: Any, other: Any, limit: int = 160) -> tuple[str, str]:
    """(value, other) as a reader compares them: long texts cut around their first difference, long number lists
    (token ids, logprobs) as their length and the window where they first differ, anything else as short JSON."""
    if isinstance(value, str) and isinstance(other, str) and value != ABSENT and other != ABSENT:
        return excerpt(value, other, context=limit // 2)
    if _numbers(value) and _numbers(other) and max(len(value), len(other)) > 16:
        at = first_difference(value, other)

        def window(items: list) -> str:
            return f"{len(items)} items, at {at}: {json.dumps(items[max(0, at - 3) : at + 5])}"

        return window(value), window(other)
    return _json(value, limit), _json(other, limit)


def text_diff(before: Any, after: Any, lines: int = 12) -> list[str]:
    """A short unified diff of two multi-line texts (the changed turn of a conversation), else nothing."""
    if not (isinstance(before, str) and isinstance(after, str)) or "\n" not in before + after:
        return []
    body = difflib.unified_diff(before.splitlines(), after.splitlines(), n=1, lineterm="")
    out = [line for line in body if not line.startswith(("---", "+++"))]
    return out[:lines] + (["…"] if len(out) > lines else [])


def _numbers(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)


def _json(value: Any, limit: int) -> str:
    text = value if value == ABSENT else json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
