"""Whether a replay reproduced its recording, and the reviewed reasons it may not.

A replay is compared with its recording leaf by leaf (the recording's reward and verifier fields against Gym's
result, the recorded tool outputs against the replay's), after volatile.toml's rules. A difference is a failure of
the path (kind `recording`) unless cases/recordings/fidelity.toml classifies it: an entry names the path (or a
glob of paths, `scicode:rec.*`, when one reason holds for every recording of an environment), the fields it covers,
one of CLASSES, a reason (an entry without one covers nothing, like an ack) and optionally the Gym versions it holds
on. A cannot-replay or needs-service entry without fields says the recording cannot be replayed at all
(unreplayable_shape). A classified replay still runs every other check and is still compared across refs; the
report shows it as not reproducing, with its class.
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gymgate import reviewed
from gymgate.compare.observation import ABSENT, Rule, flatten
from gymgate.errors import UsageError
from gymgate.locations import repo_root

VOLATILE_FILE = Path(__file__).with_name("volatile.toml")
NONDETERMINISTIC, CANNOT_REPLAY, NEEDS_SERVICE = "nondeterministic", "cannot-replay", "needs-service"
CLASSES = {
    NEEDS_SERVICE: "the recording needs a service that cannot run here",
    "verifier-changed": "the verifier changed since the recording was made (the entry names the Gym commit, or the release that first ships it)",
    NONDETERMINISTIC: "Gym's own nondeterminism: the same replay does not give the same result every time",
    CANNOT_REPLAY: "gymgate cannot replay that shape yet",
}
DIAGNOSTIC_FIELDS = ("failure_kind", "failure_reason")  # what 0.7.0 declares diagnostic, orthogonal to mask_sample
TOOL_OUTPUTS = "tool_outputs"  # the divergence field of the recorded tool outputs (tool_outputs.<n>)
JUDGE_CALLS = "judge_calls"  # the divergence field of how many times the judge was asked


def fidelity_file() -> Path:
    return repo_root() / "cases" / "recordings" / "fidelity.toml"


@dataclass(frozen=True)
class Divergence:
    field: str
    recorded: Any
    replayed: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "recorded": self.recorded, "replayed": self.replayed}


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str  # one of CLASSES
    fields: tuple[str, ...]
    reason: str
    gyms: tuple[str, ...] = ()  # the Gym versions it holds on (none: every one)
    commit: str = ""  # verifier-changed: the Gym commit that changed it
    # verifier-changed, when the Gym history at hand does not reach the commit: the release that first ships the change
    since: str = ""

    def holds(self, path: str, gym: str) -> bool:
        """It names this path (or a glob of it), on this Gym, with a reason: without one it says nothing."""
        return reviewed.holds((self.path,), self.reason, self.gyms, path, gym)

    def covers(self, path: str, gym: str, divergences: list[Divergence]) -> bool:
        return self.holds(path, gym) and all(any(under(d.field, f) for f in self.fields) for d in divergences)

    @property
    def masks(self) -> tuple[str, ...]:
        """The result fields no two runs of this path are held to agree on (Gym's own nondeterminism only)."""
        return (
            tuple(f for f in self.fields if f not in (TOOL_OUTPUTS, JUDGE_CALLS))
            if self.kind == NONDETERMINISTIC
            else ()
        )

    def to_json(self) -> dict[str, Any]:
        found = {"class": self.kind, "reason": self.reason, "commit": self.commit, "fields": list(self.fields)}
        return {**found, "since": self.since} if self.since else found


def under(field: str, covered: str) -> bool:
    """The dotted field is the covered one or inside it."""
    return field == covered or field.startswith(covered + ".")


@dataclass(frozen=True)
class Volatile:
    rules: tuple[Rule, ...]
    ignored: tuple[tuple[str, str], ...]  # (glob, keep glob)
    absent_is_null: tuple[str, ...] = ()  # globs of leaves where null on one side and absent on the other agree
    tools_as_json: bool = False  # tool outputs that are both JSON agree when their values do ([tool_outputs])

    def dropped(self, leaf: str) -> bool:
        return any(
            fnmatch.fnmatchcase(leaf, glob) and not (keep and fnmatch.fnmatchcase(leaf, keep))
            for glob, keep in self.ignored
        )

    def agree(self, leaf: str, a: Any, b: Any) -> bool:
        if {type(a), type(b)} <= {int, float}:
            return a == b
        if a is None and b == ABSENT or a == ABSENT and b is None:
            return any(fnmatch.fnmatchcase(leaf, glob) for glob in self.absent_is_null)
        return a == b and type(a) is type(b)


@cache
def volatile() -> Volatile:
    data = tomllib.loads(VOLATILE_FILE.read_text())
    rules = tuple(Rule(r["name"], r["path"], r.get("match", ""), r["why"]) for r in data.get("rule", []))
    return Volatile(
        rules,
        tuple((i["path"], i.get("keep", "")) for i in data.get("ignore", [])),
        tuple(i["path"] for i in data.get("absent_is_null", [])),
        data.get("tool_outputs", {}).get("compare", "") == "json",
    )


def entries(path: Path | None = None) -> tuple[Entry, ...]:
    """The reviewed classifications, read once per process (every replayed path asks)."""
    return _entries_of(path or fidelity_file())


def nondeterministic(path: str, gym: str) -> tuple[str, ...]:
    """The result fields reviewed entries say this path's replays do not agree on from run to run on this Gym (Gym's
    own nondeterminism): no one run of it is an oracle for them, whether that run happened to reproduce or not."""
    return tuple(sorted({m for e in entries() if e.holds(path, gym) for m in e.masks}))


@cache
def _read(file: Path) -> dict[str, Any]:
    if not file.is_file():
        return {}
    try:
        return tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{file} is not valid TOML ({exc})") from None


def verdict_markers(env: str) -> dict[str, tuple[str, ...]]:
    """The failure fields (`failure_reason`, `failure_kind`) an environment's verifier sets on its verdicts, each with
    the values that are verdicts, as a person reviewed (`[[verdict_marker]]`, with why): image_tools says why a call
    scored 0, and `none` when it did not. Only these values, and only as its recording holds them, may a replay pass
    with; a value the review did not list (a judge that failed, an unknown error) fails."""
    found: dict[str, tuple[str, ...]] = {}
    for raw in _read(fidelity_file()).get("verdict_marker", []):
        if raw.get("env") == env and str(raw.get("reason", "")).strip() and raw.get("field") in DIAGNOSTIC_FIELDS:
            found[raw["field"]] = (*found.get(raw["field"], ()), *(str(v) for v in raw.get("values", ())))
    return found


@cache
def _entries_of(file: Path) -> tuple[Entry, ...]:
    data = _read(file)
    found = []
    for raw in data.get("entry", []):
        kind = raw.get("class", "")
        if kind not in CLASSES:
            raise UsageError(f"{file}: {raw.get('path')}: class {kind!r} is not one of {', '.join(CLASSES)}")
        found.append(
            Entry(
                raw["path"],
                kind,
                tuple(raw.get("fields", ())),
                raw.get("reason", ""),
                tuple(raw.get("gyms", ())),
                raw.get("commit", ""),
                raw.get("since", ""),
            )
        )
    return tuple(found)


def divergences(
    recorded: dict[str, Any],
    result: dict[str, Any],
    recorded_tools: tuple[str, ...],
    replayed_tools: list[Any],
    judge_calls: tuple[int, int] = (0, 0),
) -> list[Divergence]:
    """Every leaf of the recording's verifier fields, every recorded tool output and the number of judge calls
    (recorded, replayed) that the replay does not reproduce (volatile leaves aside)."""
    rules = volatile()
    found: list[Divergence] = []
    if judge_calls[0] != judge_calls[1]:
        found.append(Divergence(JUDGE_CALLS, *judge_calls))
    for key, value in recorded.items():
        want = _leaves({key: value}, rules)
        got = _leaves({key: result[key]}, rules) if key in result else {}  # absent: no leaf at all
        for leaf in sorted(set(want) | set(got)):
            a, b = want.get(leaf, ABSENT), got.get(leaf, ABSENT)
            if not rules.agree(leaf, a, b):
                found.append(Divergence(leaf, a, b))
    for index in range(max(len(recorded_tools), len(replayed_tools))):
        a = recorded_tools[index] if index < len(recorded_tools) else ABSENT
        b = replayed_tools[index] if index < len(replayed_tools) else ABSENT
        if a != b and not (rules.tools_as_json and _same_json(a, b)):
            found.append(Divergence(f"{TOOL_OUTPUTS}.{index}", a, b))
    return found


def _same_json(a: Any, b: Any) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except (TypeError, ValueError):
        return False


def comparable(result: dict[str, Any], fields: Any) -> dict[str, Any]:
    """Gym's result under the recording's field names as a replay is held to it: its leaves, volatile ones replaced
    or dropped (what a record keeps, so two runs of one Gym keep the same)."""
    return _leaves({k: result[k] for k in fields if k in result}, volatile())


def _leaves(value: dict[str, Any], rules: Volatile) -> dict[str, Any]:
    leaves, _ = flatten(value, rules.rules)
    return {k: v for k, v in leaves.items() if not rules.dropped(k)}


def unreplayable_shape(path: str, gym: str) -> Entry | None:
    """The reviewed entry that says a recording cannot be replayed at all (class cannot-replay or needs-service, no
    fields: e.g. it keeps only the first of the model calls its agent makes), if any. Its path runs as a SKIP that
    says why, never a pass; an environment left with no replayable recording is listed as not runnable here."""
    return next(
        (e for e in entries() if not e.fields and e.kind in (CANNOT_REPLAY, NEEDS_SERVICE) and e.holds(path, gym)),
        None,
    )


def classification(path: str, gym: str, found: list[Divergence]) -> Entry | None:
    """The reviewed entry that explains every one of these divergences on this Gym, if any."""
    return next((e for e in entries() if e.covers(path, gym, found)), None)
