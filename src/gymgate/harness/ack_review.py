"""`gymgate ack --review`: each unacknowledged contract change of a comparison shown to a person, one at a time, as
snapshot tools walk changed snapshots (insta's `cargo insta review`): its values before and after, the paths it
touches, what the reviewed steps between the two refs already say of it; then accept with a reason, or skip. The
pair's ack file is edited in place, keeping what the reviewer wrote in it (comments, order), so a second pass
starts where the first stopped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gymgate.compare import acks as ack_files
from gymgate.compare.observation import side_by_side
from gymgate.compare.runs import ChangeGroup, Comparison

ACCEPT, SKIP, QUIT = "a", "s", "q"
PROMPT = "[a]ccept with a reason, [s]kip, [q]uit (or type the reason): "
SHOWN_PATHS = 8
SHOWN_NOTES = 3


@dataclass
class Reviewed:
    file: Path
    accepted: int = 0
    skipped: int = 0
    left: int = 0  # not reached (quit, or the input ended)


def review(
    comparison: Comparison,
    directory: Path,
    reviews: ack_files.Reviews,
    ask: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
) -> Reviewed:
    """Walk the comparison's unacknowledged contract changes, writing each answer into the pair's file in
    `directory`: an accepted change gets its entry (with the reason), a skipped one a draft entry without one."""
    path = ack_files.pair_file(directory, comparison.baseline, comparison.candidate)
    document = ack_files.open_pair(path, comparison.baseline, comparison.candidate)
    routes = ack_files.chains(reviews.steps(), comparison.baseline, comparison.candidate)
    groups = [g for g in comparison.change_groups() if g.failing]
    done = Reviewed(path, left=len(groups))
    for number, group in enumerate(groups, 1):
        say("\n".join(describe(group, number, len(groups), routes)))
        reason = _answer(ask)
        if reason is None:
            break
        entry, _ = ack_files.entry_for(document, group.sample)
        for route in group.paths:
            ack_files.add_path(entry, route)
        if reason:
            entry["reason"] = reason
            done.accepted += 1
        else:
            done.skipped += 1
        done.left -= 1
        ack_files.save_pair(path, document)  # each answer kept as it is given: an interrupted walk loses none
    return done


def _answer(ask: Callable[[str], str]) -> str | None:
    """The reason given ("" for a skip), or None to stop (quit, or no more input)."""
    while True:
        try:
            answer = ask(PROMPT).strip()
        except EOFError:
            return None
        if answer.lower() == QUIT:
            return None
        if answer.lower() == SKIP:
            return ""
        if answer.lower() == ACCEPT:
            try:
                reason = ask("reason (one line a maintainer would accept): ").strip()
            except EOFError:
                return None
            if reason:
                return reason
            continue  # an acceptance without a reason acknowledges nothing: asked again
        if len(answer) > 1:
            return answer


def describe(group: ChangeGroup, number: int, total: int, routes: list[list[ack_files.Step]]) -> list[str]:
    """What a reviewer reads before answering."""
    before, after = side_by_side(group.sample.before, group.sample.after, ack_files.EXCERPT)
    shown = group.paths[:SHOWN_PATHS]
    more = f" and {len(group.paths) - len(shown)} more" if len(group.paths) > len(shown) else ""
    lines = [
        "",
        f"[{number}/{total}] {group.field}",
        f"  before: {before}",
        f"  after:  {after}",
        f"  paths:  {', '.join(shown)}{more}",
    ]
    lines += [f"  {line}" for line in chain_notes(group, routes)]
    return lines


def chain_notes(group: ChangeGroup, routes: list[list[ack_files.Step]]) -> list[str]:
    """What the reviewed steps between the refs already say of this field: on these paths (the steps that carry
    part of the way, so the reviewer sees where the chain breaks), else the same values reviewed on other paths
    (another environment's case of the same server, say), whose reason may hold here too."""
    field = ack_files.fold(group.field)
    named = {p for path in group.paths for p in ack_files.reviewed_as(path)}
    here, elsewhere = [], []
    steps = {id(s): s for route in routes for s in route}.values()  # each step once, in the order reached
    for step in steps:
        for entry in (a for a in step.acks if a.field == field):
            said = entry.reason or "no reason yet"
            if named & set(entry.paths):
                here.append(f"step {step.baseline} → {step.candidate} reviewed it here ({entry.ref}): {said}")
            elif entry.match == ack_files.match_key(group.sample):
                others = ", ".join(entry.paths[:3]) + (" …" if len(entry.paths) > 3 else "")
                elsewhere.append(
                    f"step {step.baseline} → {step.candidate} reviewed the same values on {others}: {said}"
                )
    if routes and not here:
        here.append("no reviewed step between the two refs names this field on these paths")
    return [*here, *elsewhere[:SHOWN_NOTES]]
