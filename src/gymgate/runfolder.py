"""The run folder's marks and records, read and written in one place.

`run.json` says what a run was asked to do and how it ended: the expected paths, the test session's exit status,
whether it finished, what did not stop within its bounds (lifecycle). Path records live in `paths/<env>-<mode>.json`.
Readers get one record per expected path: an expected path that left no record is an ERROR ("no record: …"),
never silently absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gymgate.acceptance.record import NO_RECORD, stub_record
from gymgate.atomic import write_json_atomic
from gymgate.errors import UsageError
from gymgate.outcomes import ERROR, HARNESS

RUN_MARK = "run.json"
SCHEMA = 2  # the run folder's shape; bumped when its files change (2: every path record carries `observed`)
PATHS = "paths"
WORKERS = "workers"
CRASH = "crash.txt"  # gymgate's own traceback, when a command crashed (never a verdict)
_opened: list[Path] = []  # run folders this process opened, newest last (where a crash trace goes)
# pytest's exit statuses of a session that ran its tests to the end (0 all passed, 1 some failed)
FINISHED_STATUSES = (0, 1)


def read_mark(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_MARK
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise UsageError(f"{path} is damaged ({exc}); rerun") from exc


def write_mark(run_dir: Path, mark: dict[str, Any]) -> Path:
    return write_json_atomic(run_dir / RUN_MARK, {**mark, "schema": SCHEMA})


def check_schema(run_dir: Path, mark: dict[str, Any]) -> None:
    """A run folder written by another gymgate (its files have another shape) is refused, never misread."""
    if mark.get("schema") != SCHEMA:
        found = mark.get("schema", "none (written before run folders carried one)")
        raise UsageError(
            f"{run_dir} was written by another version of gymgate (run folder schema {found}; this gymgate "
            f"reads {SCHEMA}); rerun it with this version"
        )


def opened(run_dir: Path) -> Path:
    """Note that this process works in `run_dir`: a crash's trace is written there."""
    _opened.append(run_dir)
    return run_dir


def write_crash(exc: BaseException) -> Path:
    """The traceback of gymgate's own crash, into the run folder this process opened last (else a temp file).
    The run stays marked incomplete, so it is never compared or reused."""
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(exc))
    if _opened and _opened[-1].is_dir():
        target = _opened[-1] / CRASH
    else:
        handle, name = tempfile.mkstemp(prefix="gymgate-crash-", suffix=".txt")
        os.close(handle)
        target = Path(name)
    target.write_text(text)
    return target


def load_records(run_dir: Path, expected: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Every path record of the run, by path id, plus an ERROR stub for each expected path (from `expected` or the
    run's mark) that has none. A record that cannot be read is an ERROR too, never a pass."""
    records: dict[str, dict[str, Any]] = {}
    for file in sorted((run_dir / PATHS).glob("*.json")):
        try:
            record = json.loads(file.read_text())
            if (
                f"{record['env']}-{record['mode']}" != file.stem
                or record["path"] != f"{record['env']}:{record['mode']}"
            ):
                raise ValueError(f"it holds the record of {record['path']}")
            records[record["path"]] = record
        except (OSError, ValueError, KeyError, TypeError) as exc:
            env, _, mode = file.stem.rpartition("-")
            path = f"{env}:{mode}"
            records[path] = stub_record(path, ERROR, f"{NO_RECORD}: {file.name} is unreadable ({exc})", blame=HARNESS)
    wanted = expected if expected is not None else read_mark(run_dir).get("expected", [])
    for path in wanted:
        if path not in records:
            reason = f"{NO_RECORD}: the path left no result (its worker died, or the session ended before it)"
            records[path] = {**stub_record(path, ERROR, reason, blame=HARNESS), "missing": True}
    return records


def lifecycle_failures(run_dir: Path) -> list[str]:
    """What the session's workers could not stop within its bounds (each was killed), from workers/*.json."""
    found = []
    for file in sorted((run_dir / WORKERS).glob("*.json")):
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError):
            continue
        for env, errors in sorted((data.get("stop_errors") or {}).items()):
            found += [f"{env}: {error}" for error in errors]
    return found
