"""Where a judging command's output goes: its result on stdout, everything else on stderr.

The result — the verdict view a person reads, or `--json`'s document — is what a pipe or a script keeps
(`gymgate accept … > verdict.txt`); progress is gymgate's own lines and everything the Gyms, uv and pytest print.
The command line splits them once, before a judging command runs: file descriptor 1, which every child inherits,
becomes stderr, and the original stdout is kept for the result alone. Other commands (resolve, cases list, …) print
their result as any program does.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

SCHEMA = 1  # the version of every JSON document gymgate prints or writes (`--json`, results.json, load.json)

_result: TextIO | None = None  # the original stdout, once split
_json = False  # stdout holds the JSON document alone: the view goes to stderr


@contextlib.contextmanager
def split(json: bool = False) -> Iterator[None]:
    """While the command runs, this process's and its children's prints go to stderr and the result to the old
    stdout; afterwards, stdout is stdout again."""
    global _result, _json
    sys.stdout.flush()
    kept = os.dup(1)
    _result, _json = os.fdopen(os.dup(1), "w"), json
    os.dup2(2, 1)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):  # a reader gone away (`| head`) leaves nothing to flush
            sys.stdout.flush()
            _result.flush()
        with contextlib.suppress(OSError):
            _result.close()
        os.dup2(kept, 1)
        os.close(kept)
        _result, _json = None, False


def view() -> TextIO:
    """Where the verdict a person reads goes: stdout, unless `--json` holds it (then stderr, with the progress)."""
    if _result is None or _json:
        return sys.stdout
    return _result


def write_document(document: dict[str, Any]) -> None:
    """`--json`'s document, alone on stdout, stamped with the schema version it follows."""
    out = _result or sys.stdout
    out.write(json.dumps({"schema": SCHEMA, **document}, indent=2) + "\n")
    out.flush()


def discard() -> None:
    """The reader of stdout went away (`… | head`): what is left to print goes nowhere instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    if _result is not None:
        os.dup2(devnull, _result.fileno())
