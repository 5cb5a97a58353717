"""Sessions with several tool calls: the same work a path's model does, spread over more calls in one session (a
read-only call before or after the real ones, the calls of one turn split over several turns, the calls of several
turns made at once). A stateful tool server keeps a session across a rollout's calls: one that loses it, or mixes
two sessions, is seen only when a rollout calls tools more than once.

What counts as read-only is the environment's business, never guessed: a case declares its read-only calls in a
`[session]` table (cases/<env>.toml), with what the call answers where that is known. Rewriting the turns is generic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gymgate.endpoint.script import Script, ToolCall, Turn

READ_FIRST, READ_AFTER, SPLIT, MERGE = "read_first", "read_after", "split", "merge"


@dataclass(frozen=True)
class ReadOnlyCall:
    """A call that reads the session's state and changes nothing, and, when declared, what it answers (on a fresh
    session: `output` is held where the call runs before any other)."""

    call: ToolCall
    output: str | None = None


@dataclass(frozen=True)
class ReadYourWrites:
    """A session probe (`[session.read_your_writes]`): a call that writes to the session, then one whose answer
    depends on that write (on a fresh session, `output`). Rolled out concurrently in GRPO groups under load, every
    session must read only its own write: a store that sessions share shows the others' writes too."""

    write: ToolCall
    read: ToolCall
    output: str | None = None


@dataclass(frozen=True)
class SessionDecl:
    """An environment's `[session]` table: that its agent runs the model's tool calls in one session, the calls that
    only read that session, whether calls may be made at once (None: as the row's `parallel_tool_calls` says), and
    its read-your-writes probe under load."""

    read_only: tuple[ReadOnlyCall, ...] = ()
    parallel: bool | None = None
    read_your_writes: ReadYourWrites | None = None

    @classmethod
    def from_data(cls, data: dict[str, Any], where: str) -> SessionDecl:
        unknown = set(data) - {"read_only", "parallel", "read_your_writes"}
        if unknown:
            raise ValueError(
                f"{where}: [session] has unknown key(s) {sorted(unknown)} (read_only, parallel, read_your_writes)"
            )
        calls = []
        for entry in data.get("read_only", []):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or "arguments" not in entry:
                raise ValueError(f"{where}: [session] read_only entries are {{ name, arguments, output? }}: {entry!r}")
            output = entry.get("output")
            calls.append(ReadOnlyCall(ToolCall.from_data(entry), None if output is None else str(output)))
        parallel = data.get("parallel")
        if parallel is not None and not isinstance(parallel, bool):
            raise ValueError(f"{where}: [session] parallel is true or false")
        return cls(tuple(calls), parallel, _read_your_writes(data.get("read_your_writes"), where))


def _read_your_writes(data: Any, where: str) -> ReadYourWrites | None:
    if data is None:
        return None
    shape = "[session.read_your_writes] is { write = { name, arguments }, read = { name, arguments }, output? }"
    calls = [data.get(k) if isinstance(data, dict) else None for k in ("write", "read")]
    if not all(isinstance(c, dict) and isinstance(c.get("name"), str) and "arguments" in c for c in calls):
        raise ValueError(f"{where}: {shape}: {data!r}")
    if set(data) - {"write", "read", "output"}:
        raise ValueError(f"{where}: {shape}: unknown key(s) {sorted(set(data) - {'write', 'read', 'output'})}")
    output = data.get("output")
    return ReadYourWrites(
        ToolCall.from_data(calls[0]), ToolCall.from_data(calls[1]), None if output is None else str(output)
    )


def read_your_writes(script: Script, session: SessionDecl | None) -> Script | None:
    """The script with the session probe's write and read, each a turn of its own, before its first turn that calls
    tools: what a load run rolls out concurrently in GRPO groups (load/driver.py). None when the case declares no
    probe or the script calls no tools (its agent may not keep a session)."""
    if session is None or session.read_your_writes is None or not any(t.tool_calls for t in script.turns):
        return None
    probe = session.read_your_writes
    turns = list(script.turns)
    at = next(i for i, t in enumerate(turns) if t.tool_calls)
    turns[at:at] = [Turn(tool_calls=(probe.write,)), Turn(tool_calls=(probe.read,))]
    return _spread(script, turns, inserted={at, at + 1})


def rewrite(kind: str, script: Script, session: SessionDecl | None, row: dict[str, Any] | None) -> Script | None:
    """The script with its calls spread as `kind` says, or None when it does not fit (no `[session]` declared, no
    tool calls to spread, calls at once where the row forbids them). The rewritten script names the calls it added
    (`inserted_calls`), so that its original's tool outputs are held to the original's calls only."""
    if kind not in REWRITES:
        raise ValueError(f"unknown session rewrite {kind!r} ({', '.join(REWRITES)})")
    if session is None or not any(t.tool_calls for t in script.turns):
        return None
    return REWRITES[kind](script, session, row)


def _read(script: Script, session: SessionDecl, first: bool) -> Script | None:
    """The case's first read-only call in a turn of its own, before the first turn that calls tools (or after the
    last)."""
    if not session.read_only:
        return None
    turns = list(script.turns)
    working = [i for i, t in enumerate(turns) if t.tool_calls]
    at = working[0] if first else working[-1] + 1
    turns.insert(at, Turn(tool_calls=(session.read_only[0].call,)))
    return _spread(script, turns, inserted={at})


def _split(script: Script, session: SessionDecl, row: dict[str, Any] | None) -> Script | None:
    """Each turn that only calls tools, one turn per call (the first keeps the turn's reasoning)."""
    out: list[Turn] = []
    for turn in script.turns:
        if len(turn.tool_calls) < 2 or turn.content:
            out.append(turn)
            continue
        out.append(replace(turn, tool_calls=turn.tool_calls[:1]))
        out += [Turn(tool_calls=(call,)) for call in turn.tool_calls[1:]]
    return _spread(script, out) if len(out) > len(script.turns) else None


def _merge(script: Script, session: SessionDecl, row: dict[str, Any] | None) -> Script | None:
    """Consecutive turns that only call tools, as one turn making their calls at once (where the row allows)."""
    if not allows_parallel(session, row):
        return None
    out: list[Turn] = []
    for turn in script.turns:
        if out and _calls_only(out[-1]) and _calls_only(turn):
            out[-1] = replace(out[-1], tool_calls=out[-1].tool_calls + turn.tool_calls)
        else:
            out.append(turn)
    return _spread(script, out) if len(out) < len(script.turns) else None


REWRITES: dict[str, Callable[[Script, SessionDecl, dict[str, Any] | None], Script | None]] = {
    READ_FIRST: lambda script, session, row: _read(script, session, first=True),
    READ_AFTER: lambda script, session, row: _read(script, session, first=False),
    SPLIT: _split,
    MERGE: _merge,
}


def allows_parallel(session: SessionDecl, row: dict[str, Any] | None) -> bool:
    """Whether the model may make calls at once: the declaration, else the row's `parallel_tool_calls` (a row not
    known yet fits for now: the form is applied again to the row the path is fed)."""
    if session.parallel is not None:
        return session.parallel
    params = (row or {}).get("responses_create_params") or {}
    return params.get("parallel_tool_calls") is not False


def _calls_only(turn: Turn) -> bool:
    return bool(turn.tool_calls) and not turn.content


def _spread(script: Script, turns: list[Turn], inserted: set[int] = frozenset()) -> Script:
    """The script with these turns; `inserted`: indexes of turns whose calls the original does not make."""
    positions, n = [], 0
    for index, turn in enumerate(turns):
        for _ in turn.tool_calls:
            if index in inserted:
                positions.append(n)
            n += 1
    return replace(script, turns=tuple(turns), inserted_calls=tuple(positions))


def declared_outputs(script: Script, session: SessionDecl | None) -> dict[int, str]:
    """The output the case declares for a read-only call the rewrite put before every other call (position ->
    output): made first, it answers as on a fresh session. Elsewhere what it answers depends on the work before it."""
    if session is None or script.inserted_calls[:1] != (0,):
        return {}
    first = script.turns[next(i for i, t in enumerate(script.turns) if t.tool_calls)].tool_calls[0]
    output = next((r.output for r in session.read_only if r.call == first), None)
    return {} if output is None else {0: output}
