"""The closing summary of one accept run, read back from its path records (renderers never compute verdicts
from anything but the records)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gymgate.acceptance.record import stub_record
from gymgate.errors import EXIT_ERROR, EXIT_FAILED, EXIT_OK

ORDER = {"BROKEN": 0, "FAIL": 1, "ERROR": 2, "PASS": 3, "SKIP": 4}


def load_records(run_dir: Path, expected: list[str] | None = None) -> list[dict]:
    """Every path record; a path that was expected but left no record is an ERROR, never silently absent."""
    records = [json.loads(p.read_text()) for p in sorted((run_dir / "paths").glob("*.json"))]
    seen = {r["path"] for r in records}
    missing = "infrastructure: no result record (the run was interrupted or its worker died)"
    records += [stub_record(path, "ERROR", missing) for path in expected or [] if path not in seen]
    return records


def verdict(records: list[dict], pytest_code: int) -> int:
    """0 every path passed or was skipped; 1 a path failed or errored; 2 the run could not judge anything."""
    if not records:
        return EXIT_ERROR
    if any(r["outcome"] in ("FAIL", "ERROR", "BROKEN") for r in records) or pytest_code == 1:
        return EXIT_FAILED
    return EXIT_OK if pytest_code == 0 else EXIT_ERROR


def print_summary(run_dir: Path, pytest_code: int, expected: list[str] | None = None, out=sys.stdout) -> int:
    records = sorted(load_records(run_dir, expected), key=lambda r: (ORDER.get(r["outcome"], 9), r["path"]))
    counts = {k: sum(1 for r in records if r["outcome"] == k) for k in ORDER}
    print("", file=out)
    print(f"{'path':<56} {'outcome':<7} {'reward':>6}  reason", file=out)
    for record in records:
        reward = "" if record.get("reward") is None else f"{record['reward']:.1f}"
        reason = (record.get("reason") or "").splitlines()[0][:110] if record.get("reason") else ""
        print(f"{record['path']:<56} {record['outcome']:<7} {reward:>6}  {reason}", file=out)
    code = verdict(records, pytest_code)
    label = {EXIT_OK: "clean", EXIT_FAILED: "failures found", EXIT_ERROR: "could not judge"}[code]
    print(
        f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['ERROR']} errors, {counts['SKIP']} skipped"
        + (f", {counts['BROKEN']} broken" if counts["BROKEN"] else "")
        + " "
        f"— {label}; records in {run_dir / 'paths'}",
        file=out,
    )
    return code
