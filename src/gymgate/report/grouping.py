"""Many paths and many changes, said in the fewest words a reader needs.

A set of paths is named by its shape (`all 14 paths`, `all 7 environments × accepted`, `mcqa × accepted, rejected`)
instead of a list of ids; changes that move together — the same kind of change in the same part of what Gym sends or
returns, on the same paths, under the same review — are one line (`19 fields new in 0.7.0's result (completed_at,
moderation, …) — all 14 paths`); root causes on the same paths are one line. The terminal, report.md and report.html
all group through here, so they say the same thing at different lengths."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gymgate.compare.observation import ABSENT, CONTRACT
from gymgate.compare.runs import CHANGED_CAUSE, ChangeGroup, PathComparison
from gymgate.pathid import MODES, ORIGINAL, KindNames, PathId, kinds
from gymgate.rl.profile import NOT_READ, USE_WORDS, USES, Profile
from gymgate.rl.profile import load as load_profile

NAMES_SHOWN = 4  # field names or environments named in one line before "…"
ENVS_NAMED = 3


def describe_paths(paths: Iterable[str], universe: Iterable[str]) -> str:
    """A set of path ids by its shape, against every path the comparison judged (`universe`)."""
    chosen = sorted(set(paths))
    everything = set(universe)
    if len(chosen) > 1 and set(chosen) == everything:
        return f"all {len(chosen)} paths"
    all_envs = {PathId(p).env for p in everything}
    modes_of: dict[str, list[str]] = {}
    for path in chosen:
        modes_of.setdefault(PathId(path).env, []).append(PathId(path).mode)
    together: dict[tuple[str, KindNames], set[str]] = {}  # (environment, a kind whose paths are named together)
    for path in map(PathId, everything):
        if path.kind.together:
            together.setdefault((path.env, path.kind), set()).add(path.mode)
    by_modes: dict[tuple[str, ...], list[str]] = {}
    for env, modes in modes_of.items():
        by_modes.setdefault(_modes(modes, {k: v for (e, k), v in together.items() if e == env}), []).append(env)
    parts = []
    for modes, envs in sorted(by_modes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        parts.append(f"{_envs(envs, all_envs)} × {', '.join(modes)}")
    return "; ".join(parts)


def _modes(modes: list[str], together: dict[KindNames, set[str]]) -> tuple[str, ...]:
    """An environment's chosen paths by name: those named one by one, then each kind whose paths are named together
    (pathkinds.toml `together`) — `every recording` when all of them, a family's shape when it is one (`3 forms ×
    6 paths`), else how many — so environments that share a shape read as one."""
    grouped = set().union(*together.values()) if together else set()
    shown = [*sorted((m for m in modes if m not in grouped), key=_mode_order)]
    for kind, every in sorted(together.items(), key=lambda kv: kinds().index(kv[0])):
        chosen = sorted(m for m in modes if m in every)
        if not chosen:
            continue
        if set(chosen) == every and len(chosen) > 1:
            shown.append(kind.together)
        elif len(chosen) <= 2:
            shown += chosen
        else:
            some = f"{len(chosen)} of {len(every)} {kind.together.split()[-1]}s ({', '.join(chosen[:2])}, …)"
            shown.append(_family(kind, chosen) or some)
    return tuple(shown)


def _family(kind: KindNames, chosen: list[str]) -> str:
    """Paths of a kind named by two fields (a form of an original path) that are every pairing of theirs, by
    their counts: `3 forms × 6 paths`; "" when they are not such a grid."""
    parts = [kind.parts(mode) or {} for mode in chosen]
    fields = sorted(parts[0], key=lambda f: f == ORIGINAL)
    if len(fields) != 2:
        return ""
    values = [sorted({p[f] for p in parts}) for f in fields]
    if len(values[0]) * len(values[1]) != len(chosen):
        return ""
    named = [
        ("path" if f == ORIGINAL else f) + ("s" if len(v) > 1 else "") for f, v in zip(fields, values, strict=True)
    ]
    return f"{len(values[0])} {named[0]} × {len(values[1])} {named[1]}"


def _mode_order(mode: str) -> tuple[int, str]:
    return (MODES.index(mode) if mode in MODES else len(MODES), mode)


def _envs(envs: list[str], all_envs: set[str]) -> str:
    if len(envs) == 1:
        return envs[0]
    if set(envs) == all_envs:
        return f"all {len(envs)} environments"
    if len(envs) <= ENVS_NAMED:
        return ", ".join(envs)
    missing = sorted(all_envs - set(envs))
    if len(missing) <= 2:
        return f"{len(envs)} environments (all but {', '.join(missing)})"
    return f"{len(envs)} environments ({', '.join(envs[:2])}, …)"


def leaf_name(folded: str) -> str:
    """The name a reader knows a field by: its last component that is not an index."""
    parts = [p for p in folded.split(".") if p != "*" and not p.isdigit()]
    return parts[-1] if parts else folded


def _names(fields: Sequence[str]) -> str:
    names = list(dict.fromkeys(leaf_name(f) for f in fields))
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (", …" if len(names) > NAMES_SHOWN else "")


def _where(folded: str) -> str:
    """Which part of the observation a field is in: `result`, or the kind of request (`policy requests`)."""
    parts = folded.split(".")
    if parts[0] == "requests" and len(parts) > 1:
        return f"{parts[1]} requests"
    return parts[0]


FAILING, ACKNOWLEDGED, ADDITIVE = "failing", "acknowledged", "additive"


@dataclass
class ChangeBundle:
    """Changes that move together: one status, one part of the observation, one direction, the same paths. A field
    whose values differ from path to path (a token count per environment) is one field here, its groups kept."""

    status: str  # FAILING (unacknowledged contract), ACKNOWLEDGED, ADDITIVE
    where: str
    direction: str  # "added", "removed", "changed"
    paths: tuple[str, ...]
    groups: list[ChangeGroup] = field(default_factory=list)  # every (field, values) group, in field order
    ack: str = ""  # the review's reason, for acknowledged bundles
    ack_file: str = ""
    use: str = NOT_READ  # how the run's RL uses these leaves (gymgate.rl.profile: trains, routes, logs, not read)

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(g.field for g in self.groups))

    def paths_of(self, group: ChangeGroup, universe: Iterable[str]) -> str:
        """The paths of one value pair, when they are not all of the bundle's ("" when they are)."""
        return "" if set(group.paths) == set(self.paths) else describe_paths(group.paths, universe)

    def line(self, baseline: str, candidate: str, downgrade: bool, universe: Iterable[str]) -> str:
        return f"{self.what(baseline, candidate, downgrade)} ({USE_WORDS[self.use]}) — {describe_paths(self.paths, universe)}"

    def what(self, baseline: str, candidate: str, downgrade: bool) -> str:
        fields = self.fields
        if len(fields) == 1:
            group = self.groups[0]
            before, after = _short(group.sample.before), _short(group.sample.after)
            if len(self.groups) > 1:  # one field, other values on other paths
                before = after = f"{len(self.groups)} values by path"
            if self.direction == "added":
                return f"`{group.field}` new in {candidate}: {after}"
            if self.direction == "removed":
                whose = f"of {baseline} absent in the older {candidate}" if downgrade else f"gone in {candidate}"
                return f"`{group.field}` {whose} (was {before})"
            if len(self.groups) > 1:
                return f"`{group.field}` changed ({len(self.groups)} value pairs by path)"
            return f"`{group.field}`: {before} → {after}"
        count = f"{len(fields)} fields"
        names = f" ({_names(fields)})"
        if self.direction == "added":
            return f"{count} new in {candidate}'s {self.where}{names}"
        if self.direction == "removed":
            if downgrade:  # what the newer baseline added reads as gone: say whose they are
                return f"{count} of {baseline}'s {self.where} that the older {candidate} lacks{names}"
            return f"{count} gone from {candidate}'s {self.where}{names}"
        return f"{count} changed in {self.where}{names}"


def _short(value: object, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = text.replace("\n", "⏎")
    return "`" + (text if len(text) <= limit else text[: limit - 1] + "…") + "`"


def _direction(group: ChangeGroup) -> str:
    if group.sample.before == ABSENT:
        return "added"
    if group.sample.after == ABSENT:
        return "removed"
    return "changed"


def _status(group: ChangeGroup) -> str:
    return FAILING if group.failing else ACKNOWLEDGED if group.kind == CONTRACT else ADDITIVE


def bundle_changes(groups: Iterable[ChangeGroup], profile: Profile | None = None) -> list[ChangeBundle]:
    """Change groups bundled, in two steps: the groups of one field (its values differing by path) are one field,
    then fields that change the same way on exactly the same paths, and that the run's RL uses alike (`profile`:
    trains on, routes by, only logs, does not read), are one bundle. Unacknowledged contract changes first, then
    acknowledged, then additive; within each, what RL trains on first, then the most widespread."""
    profile = profile or load_profile()
    by_field: dict[tuple, list[ChangeGroup]] = {}
    for group in groups:
        ack = group.ack if _status(group) == ACKNOWLEDGED else ""
        by_field.setdefault((_status(group), ack, group.field, _direction(group)), []).append(group)
    bundles: dict[tuple, ChangeBundle] = {}
    for (status, ack, folded, direction), members in by_field.items():
        paths = tuple(sorted({p for g in members for p in g.paths}))
        use = profile.use_of(folded)
        key = (status, _where(folded), direction, paths, ack, use)
        bundle = bundles.setdefault(key, ChangeBundle(status, key[1], direction, paths, ack=ack, use=use))
        bundle.ack_file = bundle.ack_file or members[0].ack_file
        bundle.groups += members
    order = {FAILING: 0, ACKNOWLEDGED: 1, ADDITIVE: 2}
    uses = [*USES, NOT_READ]
    return sorted(
        bundles.values(), key=lambda b: (order[b.status], uses.index(b.use), -len(b.paths), -len(b.fields), b.where)
    )


@dataclass
class CauseLine:
    """Root causes shared by exactly the same paths, said once."""

    causes: list[str]
    paths: list[PathComparison]

    def text(self, universe: Iterable[str]) -> str:
        changed = [c for c in self.causes if c.startswith(CHANGED_CAUSE)]
        others = [c for c in self.causes if not c.startswith(CHANGED_CAUSE)]
        said = others[:NAMES_SHOWN] + (["…"] if len(others) > NAMES_SHOWN else [])
        if changed:
            said.append(
                f"{CHANGED_CAUSE} {len(changed)} unacknowledged contract change{'s' if len(changed) > 1 else ''}"
            )
        categories = sorted({p.category for p in self.paths})
        return f"{'; '.join(said)} — {describe_paths([p.path for p in self.paths], universe)} ({', '.join(categories)})"


def cause_lines(causes: list[tuple[str, list[PathComparison]]]) -> list[CauseLine]:
    """Root causes (cause → paths, most widespread first) with the same paths merged into one line; failures first,
    then every unacknowledged contract change as one line (Contract changes shows them, grouped)."""
    merged: dict[tuple[str, ...], CauseLine] = {}
    changed = CauseLine([], [])
    for cause, items in causes:
        if cause.startswith(CHANGED_CAUSE):
            changed.causes.append(cause)
            changed.paths += [i for i in items if i not in changed.paths]
            continue
        key = tuple(sorted(i.path for i in items))
        merged.setdefault(key, CauseLine([], list(items))).causes.append(cause)
    return [*merged.values(), *([changed] if changed.causes else [])]
