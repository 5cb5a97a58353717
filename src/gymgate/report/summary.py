"""The closing summary of one accept run, read back from its path records (renderers never compute verdicts
from anything but the records)."""

from __future__ import annotations

import sys

from gymgate.errors import EXIT_ERROR, EXIT_FAILED, EXIT_OK
from gymgate.outcomes import BROKEN, ERROR, FAIL, PASS, SKIP
from gymgate.runfolder import FINISHED_STATUSES, PathRecord, RunFolder
from gymgate.text import reward_text

ORDER = {BROKEN: 0, FAIL: 1, ERROR: 2, PASS: 3, SKIP: 4}
RUN_VERDICTS = {EXIT_OK: "clean", EXIT_FAILED: "failures found", EXIT_ERROR: "could not judge"}


def verdict(
    records: list[PathRecord], pytest_code: int, lifecycle: list[str] | None = None, unstable: bool = False
) -> int:
    """0 every path passed or was skipped; 1 a path failed or errored, a path's attempts disagreed with each other
    (`unstable`), or a Gym did not stop within its bound; 2 the run could not judge anything (or its test session
    did not finish)."""
    if not records or pytest_code not in FINISHED_STATUSES:
        return EXIT_ERROR  # nothing judged, or the test session itself did not finish
    if any(r.outcome not in (PASS, SKIP) for r in records) or lifecycle or unstable or pytest_code == 1:
        return EXIT_FAILED
    return EXIT_OK


def disagreements(records: list[PathRecord]) -> dict[str, str]:
    """Each path whose attempts in this run disagreed with each other, and the line that says how."""
    from gymgate.compare.stability import disagreement

    found = {r.path: disagreement(r.attempt_records()) for r in records}
    return {path: d.line("this ref") for path, d in found.items() if d is not None}


def print_summary(run: RunFolder, pytest_code: int, expected: list[str] | None = None, out=sys.stdout) -> int:
    records = sorted(run.records(expected).values(), key=lambda r: (ORDER.get(r.outcome, 9), r.path))
    lifecycle = run.lifecycle_failures()
    counts = {k: sum(1 for r in records if r.outcome == k) for k in ORDER}
    print("", file=out)
    print(f"{'path':<56} {'outcome':<7} {'blame':<8} {'reward':>6}  reason", file=out)
    for record in records:
        reward = reward_text(record.reward)
        reason = record.reason.splitlines()[0][:110] if record.reason else ""
        print(f"{record.path:<56} {record.outcome:<7} {record.blame:<8} {reward:>6}  {reason}", file=out)
    for problem in lifecycle:
        print(f"{'lifecycle':<56} {FAIL:<7} {'':<8} {'':>6}  did not stop within its bound: {problem}", file=out)
    unstable = disagreements(records)
    for path, line in unstable.items():
        print(f"{path:<56} {'NONDET':<7} {'gym':<8} {'':>6}  {line[:200]}", file=out)
    code = verdict(records, pytest_code, lifecycle, bool(unstable))
    label = RUN_VERDICTS[code]
    print(
        f"\n{counts[PASS]} passed, {counts[FAIL]} failed, {counts[ERROR]} errors, {counts[SKIP]} skipped"
        + (f", {counts[BROKEN]} broken" if counts[BROKEN] else "")
        + (", lifecycle check failed" if lifecycle else "")
        + (f", {len(unstable)} nondeterministic" if unstable else "")
        + f" — {label}; records in {run.paths_dir}",
        file=out,
    )
    return code


def run_document(run: RunFolder, code: int, expected: list[str] | None = None, cached: bool = False) -> dict:
    """A run judged alone, for machines (`accept --json` without a baseline): the verdict and every path."""
    source = run.source()
    records = sorted(run.records(expected).values(), key=lambda r: (ORDER.get(r.outcome, 9), r.path))
    return {
        "kind": "run",
        "verdict": RUN_VERDICTS.get(code, "could not judge"),
        "exit_code": code,
        "ref": {k: source.get(k) for k in ("name", "kind", "version", "commit", "digest")},
        "run_dir": str(run.root),
        "cached": cached,
        "outcomes": {k: sum(1 for r in records if r.outcome == k) for k in ORDER},
        "lifecycle": run.lifecycle_failures(),
        "nondeterministic": disagreements(records),
        "paths": [
            {"path": r.path, "outcome": r.outcome, "blame": r.blame, "reward": r.reward, "reason": r.reason}
            for r in records
        ],
    }


def run_markdown(document: dict) -> str:
    """A run judged alone (`run_document`), as the CI job summary shows it."""
    lines = [
        f"## gymgate: {document['ref'].get('name')} — {document['verdict']}",
        "",
        "| path | outcome | blame | reason |",
        "|---|---|---|---|",
    ]
    for item in document["paths"]:
        reason = item["reason"].splitlines()[0][:160].replace("|", "\\|") if item["reason"] else ""
        lines.append(f"| `{item['path']}` | {item['outcome']} | {item['blame']} | {reason} |")
    return "\n".join(lines)
