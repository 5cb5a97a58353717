"""Acknowledgements: a maintainer's reviewed, committed statement that a contract change a bump brings is acceptable.

The way snapshot-testing tools treat a changed snapshot: `gymgate ack` writes a *draft* under acks/ listing every
unacknowledged contract change of a comparison (field, paths, values before and after) with an empty reason; a
person fills in each reason and commits the file. An entry covers a change only when its ref pair, path, field
(turn and item indices folded to `*`) and exact values (by digest) all match, and it has a reason: a draft entry
without one is refused. A relevant entry (one naming a path the comparison judged) that matches nothing is stale. Acks only ever cover contract changes on
paths that pass on both refs: they never hide a FAIL, an ERROR or a missing path.

One file per ref pair (`[baseline]` and `[candidate]` name the refs and carry their digests).

Reviews compose. A bump with no file of its own (0.4.0 straight to 0.7.0) is judged against the chains of reviewed
steps whose files link its baseline to its candidate (0.4.0 -> 0.5.0 -> … -> 0.7.0): a change is covered when,
starting from its baseline value, each step of one chain either leaves the value alone or has an entry (with a
reason) taking it from exactly the value so far to the next, and the last value is the candidate's. The change then says which
steps acknowledged it; anything the chain does not carry value by value stays unacknowledged. A pair's own file
is applied first and the chain covers the rest, so what a chain cannot carry (a value one step set whole and a later
step changed inside) is reviewed once, in the pair's own file, without reviewing the chain's changes again.

A fault path (gymgate.faults) runs its environment's accepted case again: an entry naming `<env>:accepted` covers the
same change (field and exact values) on that environment's fault paths too. What only a fault path shows (how Gym
handled the fault) is reviewed on the fault path itself. Likewise a variant (gymgate.variants) is its original with
the answer written another way: an entry naming the original covers the same change on its variants; what depends
on the answer's text (the tokens it counts, the requests that carry it) has other values there and is reviewed on
the variant.

Whose reviews: gymgate ships its own (acks/, reviewed by gymgate's maintainers for every release step), and an RL
repository keeps its own beside its code (`--acks DIR`, or `acks` in its gymgate.toml). Both are read together; where
the two review the same change on the same path, the repository's entry wins, and the report says so (`Reviews`).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit

from gymgate.atomic import write_text_atomic
from gymgate.compare.observation import CONTRACT, Change, side_by_side
from gymgate.errors import UsageError
from gymgate.locations import installed, repo_root
from gymgate.pathid import PathId

HEADER = """\
# gymgate acknowledgements: {baseline} -> {candidate}
#
# Each [[change]] is a contract change this bump makes to what the model receives or what RL trains on, on paths
# that pass on both refs. Review it (the report shows it side by side), write in `reason` one line a maintainer
# would accept (what Gym changed and why), and commit this file. An entry with an empty reason acknowledges
# nothing. `match` (field, digests of the values before and after) is what a change must equal to be covered;
# `before` and `after` are for the reader.
"""
EXCERPT = 160
CHANGE_TABLE = "change"


def acks_dir() -> Path:
    """gymgate's shipped reviews (acks/ of the checkout, or of an installed gymgate's data)."""
    return repo_root() / "acks"


def shown(file: Path) -> str:
    """How a report names an ack file: `acks/<name>` for gymgate's own, else its path from here."""
    if file.parent.resolve() == acks_dir().resolve():  # the folders are read resolved (Reviews.steps)
        return f"acks/{file.name}"
    relative = os.path.relpath(file, Path.cwd())
    return str(file) if relative.startswith("..") else relative


def fold(field_name: str) -> str:
    """A field with its list indices folded (`requests.*.body.messages.*.content`): one entry covers the change
    wherever that value moved to, never a different value."""
    return re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", field_name)


@dataclass
class Entry:
    """One reviewed entry of an ack file: where it is, and its reason (an entry without one acknowledges nothing)."""

    file: Path
    index: int  # position of the entry among its file's entries of its table, from 1
    TABLE = "change"  # the table its entries are in (CHANGE_TABLE, "load")

    @property
    def ref(self) -> str:
        return f"{shown(self.file)} {self.TABLE} {self.index}"


@dataclass
class Ack(Entry):
    field: str
    paths: list[str]
    match: str
    reason: str
    used: bool = False

    @property
    def where(self) -> str:
        return f"{self.ref} ({self.field})"


@dataclass
class LoadAck(Entry):
    """A reviewed load regression (gymgate.load): in this ref pair's file, a `[[load]]` entry accepts that an
    environment's metric got worse, up to `up_to` (a ratio for a relative metric, a difference for a slope or a
    count), for `reason`. It covers a regression only when the whole interval stays within `up_to`."""

    env: str
    metric: str
    up_to: float
    reason: str
    used: bool = False
    TABLE = "load"


def files_of(refs: str) -> list[str]:
    """The ack files a change's `ack_file` names (one ref, or several joined by a chain: `Ack.ref` + `Ack.ref`)."""
    return [ref.rsplit(" change ", 1)[0] for ref in refs.split(" + ") if ref]


@dataclass
class AckReport:
    """What the acks of this comparison's ref pair did: which changes they covered, which entries are stale
    (matched nothing) and which were refused (no reason)."""

    files: list[Path] = field(default_factory=list)
    stale: list[Ack] = field(default_factory=list)
    refused: list[Ack] = field(default_factory=list)
    covered: int = 0
    overridden: list[str] = field(default_factory=list)  # shipped entries a repository's own replaced (Reviews)


def reviewed_as(path: str) -> tuple[str, ...]:
    """The paths whose entries can cover a change on `path`: itself, for a fault path its accepted path, for a
    variant its original (what the model receives there is the original's, its answer aside)."""
    original = PathId(path).original
    return (path, original) if original else (path,)


def match_key(change: Change) -> str:
    _, before, after = change.key
    return f"{fold(change.field)}: {before} -> {after}"


@dataclass
class Step:
    """One reviewed ref pair: its file, the refs' names (for the report) and digests, and its entries."""

    file: Path
    baseline: str
    candidate: str
    digests: tuple[str, str]
    acks: list[Ack]
    load: list[LoadAck] = field(default_factory=list)  # reviewed load regressions (`[[load]]`)
    # Every other table of the file, as written: what its own reader interprets (gymgate.gymtests.acks: `[[test]]`,
    # `[[interface]]`).
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # A pair reviewed in several folders is one step: its files' own steps, the repository's first (they win).
    parts: list[Step] = field(default_factory=list)
    overridden: list[str] = field(default_factory=list)  # what the repository's entries replaced, said per entry

    @property
    def files(self) -> list[Step]:
        return self.parts or [self]


OWN_TABLES = ("baseline", "candidate", "change", "load")


def read(directory: Path) -> list[Step]:
    """Every ack file in `directory`, parsed once; a file that is not one is a usage error naming it."""
    found: list[Step] = []
    for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
        try:
            data = tomllib.loads(path.read_text())
            base, cand = data["baseline"], data["candidate"]
            entries = [
                Ack(path, i, e["field"], list(e["paths"]), e["match"], str(e["reason"]).strip())
                for i, e in enumerate(data.get("change", []), 1)
            ]
            load = [
                LoadAck(path, i, e["env"], e["metric"], float(e["up_to"]), str(e["reason"]).strip())
                for i, e in enumerate(data.get("load", []), 1)
            ]
            tables = {k: list(v) for k, v in data.items() if k not in OWN_TABLES and isinstance(v, list)}
            found.append(
                Step(
                    path,
                    base.get("name", "?"),
                    cand.get("name", "?"),
                    (base["digest"], cand["digest"]),
                    entries,
                    load,
                    tables,
                )
            )
        except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"{path}: not a gymgate acknowledgement file ({type(exc).__name__}: {exc})") from exc
    return found


@dataclass(frozen=True)
class Reviews:
    """Where a comparison's reviews come from (the options of the same names): the repository's own folders
    (`--acks`, repeatable; `acks` in gymgate.toml) and gymgate's shipped ones (`--no-shipped-acks` leaves them out)."""

    acks: list[Path] | None = None
    shipped_acks: bool = True

    @property
    def folders(self) -> list[Path]:
        return [*(self.acks or []), *([acks_dir()] if self.shipped_acks else [])]

    def steps(self) -> list[Step]:
        """Every reviewed step, a pair reviewed in several folders merged into one (the first folder wins)."""
        by_pair: dict[tuple[str, str], list[Step]] = {}
        for folder in dict.fromkeys(p.resolve() for p in self.folders):
            for step in read(folder):
                by_pair.setdefault(step.digests, []).append(step)
        return [steps[0] if len(steps) == 1 else merged(steps) for steps in by_pair.values()]

    def target(self) -> Path:
        """Where `gymgate ack` writes: the repository's first folder; gymgate's own acks/ only in its checkout."""
        if self.acks:
            return self.acks[0]
        if installed():
            raise UsageError(
                "gymgate ack writes your reviews into your repository: pass --acks DIR, or set `acks` in your "
                "gymgate.toml (gymgate init writes one)"
            )
        return acks_dir()


def merged(steps: list[Step]) -> Step:
    """One pair's steps from several folders as one: every entry of the first, then each later folder's entries for
    what no earlier one reviewed (a change entry per path and value, a load entry per environment and metric, a
    Gym-test entry per test), each replaced entry said in `overridden`."""
    first = steps[0]
    acks, load, overridden = list(first.acks), list(first.load), []
    for later in steps[1:]:
        for ack in later.acks:
            taken = [a for a in acks if a.match == ack.match and set(a.paths) & set(ack.paths)]
            left = [p for p in ack.paths if not any(p in a.paths for a in taken)]
            for winner in taken:
                overridden.append(
                    f"{ack.where} on {', '.join(sorted(set(ack.paths) & set(winner.paths)))}: {winner.ref}"
                )
            if left:
                acks.append(Ack(ack.file, ack.index, ack.field, left, ack.match, ack.reason))
        for entry in later.load:
            winner = next((e for e in load if (e.env, e.metric) == (entry.env, entry.metric)), None)
            if winner is None:
                load.append(entry)
            else:
                overridden.append(f"{entry.ref} ({entry.env} {entry.metric}): {winner.ref}")
    tables: dict[str, list[dict[str, Any]]] = {}
    for step in steps:
        for name, entries in step.tables.items():
            tables.setdefault(name, []).extend(entries)
    return Step(first.file, first.baseline, first.candidate, first.digests, acks, load, tables, steps, overridden)


def load(files: list[Step], baseline: dict[str, Any], candidate: dict[str, Any]) -> list[Ack]:
    """Every entry of every ack file for exactly this (baseline digest, candidate digest) pair."""
    pair = (baseline.get("digest"), candidate.get("digest"))
    return [ack for step in files if step.digests == pair for ack in step.acks]


def load_acks(files: list[Step], baseline: dict[str, Any], candidate: dict[str, Any]) -> list[LoadAck]:
    """Every `[[load]]` entry of the files for exactly this (baseline digest, candidate digest) pair."""
    pair = (baseline.get("digest"), candidate.get("digest"))
    return [ack for step in files if step.digests == pair for ack in step.load]


def apply(acks: list[Ack], changes: dict[str, list[Change]]) -> AckReport:
    """Mark each contract change an entry with a reason covers (`Change.ack`); `changes` is per path."""
    report = AckReport(files=sorted({a.file for a in acks}))
    index = {(a.match, p): a for a in acks for p in a.paths}
    for path, items in changes.items():
        for change in items:
            key = match_key(change)
            ack = next((index[(key, p)] for p in reviewed_as(path) if (key, p) in index), None)
            if change.kind != CONTRACT or ack is None:
                continue
            ack.used = True
            if ack.reason:
                change.ack, change.ack_file = ack.reason, ack.ref
                report.covered += 1
    report.refused = [a for a in acks if a.used and not a.reason]
    # Stale: an entry on a path this comparison judged that matched nothing there. An entry whose paths were not run
    # (an environment outside the selection) says nothing either way.
    report.stale = [a for a in acks if not a.used and any(p in changes for p in a.paths)]
    return report


_MATCH = re.compile(r"^(?P<field>.*): (?P<before>\S+) -> (?P<after>\S+)$")


ROUTE_LIMIT = 64  # chains tried per comparison: ack files are a few per release, their routes fewer


def chains(files: list[Step], baseline: dict[str, Any], candidate: dict[str, Any]) -> list[list[Step]]:
    """Every chain of two or more reviewed steps from the baseline's digest to the candidate's, shortest first (at
    most ROUTE_LIMIT; [] when none links them). The pair's own file is not a step of them: its entries are applied
    first (`covered_by`); another pair's file is, and a chain through it carries what that file reviewed."""
    start, goal = baseline.get("digest"), candidate.get("digest")
    steps = [step for step in files if step.digests != (start, goal)]
    found: list[list[Step]] = []

    def walk(node: str | None, route: list[Step], seen: set[str | None]) -> None:
        if len(found) >= ROUTE_LIMIT:
            return
        if node == goal and route:
            found.append(route)
            return
        for step in steps:
            if step.digests[0] == node and step.digests[1] not in seen:
                walk(step.digests[1], [*route, step], seen | {step.digests[1]})

    walk(start, [], {start})
    return sorted(found, key=len)


def _carried(route: list[Step], path: str, change: Change) -> list[tuple[Step, Ack]] | None:
    """The entries that carry `change` value by value along `route`, or None when it does not. A step may review the
    same value going to several others (one entry per RL profile, say): each is tried, so the chain that ends at
    the candidate's value is found."""
    field_name, start, goal = fold(change.field), *change.key[1:]
    named = reviewed_as(path)

    def walk(at: int, current: str, used: list[tuple[Step, Ack]]) -> list[tuple[Step, Ack]] | None:
        if at == len(route):
            return used if used and current == goal else None
        step = route[at]
        moves = [
            (ack, parts["after"])
            for ack in step.acks
            if (parts := _MATCH.match(ack.match))
            and any(p in ack.paths for p in named)
            and (parts["field"], parts["before"]) == (field_name, current)
        ]
        if not moves:
            return walk(at + 1, current, used)  # the step did not review this value: it left it alone
        return next((found for ack, after in moves if (found := walk(at + 1, after, [*used, (step, ack)]))), None)

    return walk(0, start, [])


def apply_chain(routes: list[list[Step]], changes: dict[str, list[Change]]) -> AckReport:
    """Mark each contract change a chain carries value by value from baseline to candidate (module docstring): the
    first chain that carries it with a reason at every entry; one that carries it through an entry without a
    reason is refused."""
    report = AckReport(files=sorted({part.file for route in routes for s in route for part in s.files}))
    for path, items in changes.items():
        for change in items:
            if change.kind != CONTRACT or change.ack:  # covered already (by the pair's own file)
                continue
            carriers = [used for route in routes if (used := _carried(route, path, change))]
            reviewed = next((used for used in carriers if all(ack.reason for _, ack in used)), None)
            if reviewed is None:
                report.refused += [a for u in carriers for _, a in u if not a.reason and a not in report.refused]
                continue
            change.ack = " | ".join(f"{s.baseline} → {s.candidate}: {a.reason}" for s, a in reviewed)
            change.ack_file = " + ".join(a.ref for _, a in reviewed)
            report.covered += 1
    return report


def covered_by(files: list[Step], baseline: dict[str, Any], candidate: dict[str, Any], changes) -> AckReport:
    """Mark every contract change the reviews cover: the pair's own file first, then the chains of reviewed steps
    between the two refs for what it leaves open (module docstring). `changes` is per path. What a repository's
    entries replaced of gymgate's, on the steps this comparison reads, is said in `overridden`."""
    report = apply(load(files, baseline, candidate), changes)
    routes = chains(files, baseline, candidate)
    if routes:
        carried = apply_chain(routes, changes)
        report.files += [f for f in carried.files if f not in report.files]
        report.refused += [a for a in carried.refused if a not in report.refused]
        report.covered += carried.covered
    pair = (baseline.get("digest"), candidate.get("digest"))
    read_here = [s for s in files if s.digests == pair] + [s for route in routes for s in route]
    report.overridden = list(dict.fromkeys(line for step in read_here for line in step.overridden))
    return report


def draft(
    directory: Path, baseline: dict[str, Any], candidate: dict[str, Any], changes: dict[str, list[Change]]
) -> tuple[Path, int, list[str]]:
    """Write (or extend) the ack file of this ref pair with every unacknowledged contract change, grouped across
    paths; existing entries, their reasons and a reviewer's comments are kept. Returns the file, how many entries
    were added, and the paths added to entries that already had a reason (the same change, reviewed, reaching a
    path it did not name)."""
    path = pair_file(directory, baseline, candidate)
    document = open_pair(path, baseline, candidate)
    added, extended = 0, []
    for route, items in sorted(changes.items()):
        for change in items:
            if change.kind != CONTRACT or change.ack:
                continue
            entry, new = entry_for(document, change)
            added += new
            if add_path(entry, route) and entry["reason"]:
                extended.append(route)
    save_pair(path, document)
    return path, added, sorted(set(extended))


def entry_for(document: tomlkit.TOMLDocument, change: Change) -> tuple[Any, bool]:
    """The pair file's entry for this change's field and values, added (reason empty) when it has none."""
    key = match_key(change)
    found = next((e for e in document.get(CHANGE_TABLE, []) if e.get("match") == key), None)
    if found is not None:
        return found, False
    before, after = side_by_side(change.before, change.after, EXCERPT)
    entry = {"reason": "", "field": fold(change.field), "paths": [], "before": before, "after": after, "match": key}
    return append_entry(document, CHANGE_TABLE, entry), True


def add_path(entry: Any, route: str) -> bool:
    """Name `route` in an entry's paths (kept sorted, one a line); False when it is named already."""
    if route in entry["paths"]:
        return False
    paths = tomlkit.array()
    paths.extend(sorted([*map(str, entry["paths"]), route]))
    entry["paths"] = paths.multiline(len(paths) > 1)
    return True


def append_entry(document: tomlkit.TOMLDocument, table: str, values: dict[str, Any]) -> Any:
    """Add an entry to a table of entries (`[[table]]`), a blank line before it as between the others; returns it
    as the document holds it."""
    entries = document.setdefault(table, tomlkit.aot())
    # An array of tables read from the file renders its entries as written: the last gets the blank line itself.
    # One made here separates its entries on its own. (tomlkit keeps which it is in `_parsed`.)
    if len(entries) and getattr(entries, "_parsed", False) and not entries[-1].as_string().endswith("\n\n"):
        entries[-1].add(tomlkit.nl())
    entries.append(entry_table(values))
    return entries[-1]


def entry_table(values: dict[str, Any]) -> Any:
    """An entry as a table of the document, in the given order; text of several lines written as such."""
    table = tomlkit.table()
    for key, value in values.items():
        table.add(key, tomlkit.string(value, multiline=True) if isinstance(value, str) and "\n" in value else value)
    return table


def pair_file(directory: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> Path:
    """The ack file of this ref pair (what `draft` writes)."""
    return directory / f"{_slug(baseline)}-to-{_slug(candidate)}.toml"


def open_pair(path: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> tomlkit.TOMLDocument:
    """A pair's ack file as a document that keeps what a person wrote in it (comments, order, layout); a new one
    with the header that says how to review it, and the two refs."""
    if path.is_file():
        try:
            return tomlkit.parse(path.read_text())
        except tomlkit.exceptions.ParseError as exc:
            raise UsageError(f"{path}: not a gymgate acknowledgement file ({exc})") from None
    header = HEADER.format(baseline=baseline.get("name"), candidate=candidate.get("name"))
    document = tomlkit.parse(header + "\n")
    for role, info in (("baseline", baseline), ("candidate", candidate)):
        document.add(role, entry_table({"name": str(info.get("name")), "digest": str(info.get("digest"))}))
        document.add(tomlkit.nl())
    return document


def save_pair(path: Path, document: tomlkit.TOMLDocument) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, tomlkit.dumps(document))


def _slug(info: dict[str, Any]) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(info.get("name") or "ref"))
    digest = str(info.get("digest") or "")[:8]
    return name if info.get("kind") == "pin" or digest in name else f"{name}-{digest}"
