"""What a Gym's own log says went wrong: the root cause a maintainer needs, not the Ray wrapper around it.

Each environment's actor and its server processes write into `logs/<env>.log`. When a Gym fails to start or a
server dies, the useful line is the last exception its Python printed (`ModuleNotFoundError: No module named …`).
"""

from __future__ import annotations

import re
from pathlib import Path

from gymgate.acceptance.record import strip_ansi

TAIL_BYTES = 256 * 1024
# An exception line as Python prints it last in a traceback, possibly behind a server-name prefix.
_EXCEPTION = re.compile(r"\b((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt))(?::\s.*)?$")


def tail(log: Path | str, limit: int = TAIL_BYTES) -> list[str]:
    """The last lines of a log, colour codes removed (missing log: no lines)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            data = handle.read()
    except OSError:
        return []
    return [strip_ansi(line).rstrip() for line in data.decode(errors="replace").splitlines()]


def last_error(log: Path | str) -> str:
    """The last exception line the log holds (preferring one that closes a traceback), or ""."""
    lines = tail(log)
    closing = ""
    in_traceback = False
    found = ""
    for line in lines:
        if "Traceback (most recent call last)" in line:
            in_traceback = True
            continue
        match = _EXCEPTION.search(line.strip())
        if match and not line.startswith((" ", "\t")):
            found = line.strip()
            if in_traceback:
                closing, in_traceback = found, False
    return (closing or found)[:500]


def with_log_cause(reason: str, log: Path | str | None) -> str:
    """`reason` led by the Gym log's own error line (the first line is what reports show), when the log has one."""
    cause = last_error(log) if log else ""
    if not cause or cause in reason.splitlines()[0]:
        return reason
    return f"{cause} (logs/{Path(str(log)).name})\n{reason}"
