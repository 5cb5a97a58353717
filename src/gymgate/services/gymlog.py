"""What a Gym's own log says went wrong: the root cause a maintainer needs, not the Ray wrapper around it.

Each environment's actor and its server processes write into `logs/<env>.log`. When a Gym fails to start or a
server dies, the useful line is the last exception its Python printed (`ModuleNotFoundError: No module named …`).
"""

from __future__ import annotations

import re
from pathlib import Path

from gymgate.text import strip_ansi

TAIL_BYTES = 256 * 1024
# The line that closes a Python traceback: `ModuleNotFoundError: No module named 'x'` (a bare name is enough).
_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt))(?::\s.*)?$")
_INTERRUPT = re.compile(r"^KeyboardInterrupt\b")
# What Gym's head prints when it stops its servers (one of them died, or it was told to stop): every version.
_GYM_STOPS = re.compile(r"^Sending interrupt signals to servers")
# Python's lines between the tracebacks of one chain (an exception raised while handling another, or from it).
_CHAINED = re.compile(r"^(During handling of the above exception|The above exception was the direct cause)")
_SERVER_PREFIX = re.compile(r"^\([\w.-]+\) ")  # Gym prefixes each server's output with `(<name>) `
# uv run by Gym itself (it builds a server venv): gymgate's set-up exists so that this never happens. uv's own
# error lines: `error: No interpreter found …`, or `× No solution found when resolving …` then `╰─▶ Because …`.
_UV_ERROR = re.compile(
    r"^\s*(?:error: |× )((?:No interpreter found|No solution found|Failed to (?:fetch|download|build|resolve)).*)$"
)
_UV_BECAUSE = re.compile(r"^\s*╰─▶ (.+)$")


def size(log: Path | str) -> int:
    """Where the log ends now (0 if it does not exist): pass it as `since` to read only what comes after."""
    try:
        return Path(log).stat().st_size
    except OSError:
        return 0


def tail(log: Path | str, since: int = 0, limit: int = TAIL_BYTES) -> list[str]:
    """The last lines of a log written after byte `since`, colour codes removed (missing log: no lines)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            end = handle.tell()
            handle.seek(max(since, end - limit))
            data = handle.read()
    except OSError:
        return []
    return [strip_ansi(line).rstrip() for line in data.decode(errors="replace").splitlines()]


def last_error(log: Path | str, since: int = 0) -> str:
    """The exception line that closes the last traceback in the log (after byte `since`), or "". Only tracebacks
    count: a warning that merely mentions an error name is not a cause. A KeyboardInterrupt is a cause only when
    nothing else failed: Gym stops an instance whose server died with SIGINT, and a server still importing then
    prints one after the error that made Gym stop — at the end of a chain, too, when the interrupt landed while an
    import's own fallback was handling an ImportError (`try: import brotli` / `except ImportError: import
    brotlicffi`): none of that chain's exceptions is a cause. What Gym's servers print after Gym announced that stop
    is its consequence: an error from before the announcement leads (an interrupt can arrive wrapped in a way no
    message shows, its lines interleaved with a neighbour's)."""
    lines = _unprefixed(tail(log, since))
    stop = next((i for i, line in enumerate(lines) if _GYM_STOPS.match(line)), len(lines))
    interrupted = ""
    for part in (lines[:stop], lines[stop:]):
        found = ""
        for chain in _closing_exceptions(part):
            line, message = chain[-1]
            if _INTERRUPT.match(line) or any(_INTERRUPT.match(m) for m in message):
                interrupted = line
            else:
                found = line
        if found:
            return found[:500]
    return interrupted[:500]


def _closing_exceptions(lines: list[str]) -> list[list[tuple[str, list[str]]]]:
    """Each chain of tracebacks, as each traceback's closing exception line with the indented lines that continue
    its message; a chain's last exception is the one that ended the process. An interrupt can arrive wrapped:
    pydantic-core turns a SIGINT that lands while it builds a model's serializer into `SchemaError: Error building …
    serializer:` whose last indented line is `KeyboardInterrupt:` (measured: 2 of 90 SIGINTs sent to a process
    defining models)."""
    chains: list[list[tuple[str, list[str]]]] = []
    in_traceback = continues = chained = False
    for line in lines:
        indented = line.startswith((" ", "\t"))
        if continues and indented:
            chains[-1][-1][1].append(line.strip())
            continue
        continues = False
        if _CHAINED.match(line):
            chained = bool(chains)
        elif line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif in_traceback and not indented and _EXCEPTION.match(line):
            in_traceback = False
            continues = True
            if chained:
                chains[-1].append((line.strip(), []))
            else:
                chains.append([(line.strip(), [])])
            chained = False
    return chains


def _unprefixed(lines: list[str]) -> list[str]:
    return [_SERVER_PREFIX.sub("", line) for line in lines]


def setup_gap(log: Path | str, since: int = 0) -> str:
    """uv's own error, when Gym tried to build a server's venv (an interpreter or a download it could not get):
    what gymgate's hermetic set-up did not provide for this Gym, or ""."""
    lines = _unprefixed(tail(log, since))
    for index, line in enumerate(lines):
        match = _UV_ERROR.match(line)
        if not match:
            continue
        text = match.group(1).rstrip(":")
        for follow in lines[index + 1 : index + 4]:
            because = _UV_BECAUSE.match(follow)
            if because:
                text += f": {because.group(1)}"
                break
        return f"uv: {text}"[:500]
    return ""


def with_log_cause(reason: str, log: Path | str | None, since: int = 0) -> str:
    """`reason` led by the Gym log's own error line (the first line is what reports show), when the log has one."""
    cause = last_error(log, since) if log else ""
    if not cause or cause in reason.splitlines()[0]:
        return reason
    return f"{cause} (logs/{Path(str(log)).name})\n{reason}"
