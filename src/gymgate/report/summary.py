"""A ref judged alone, rendered: the terminal's closing table, the --json document and the CI job summary. The
verdict is gymgate.verdict's (run_verdict, via compare.alone.judge_run); these only show it."""

from __future__ import annotations

from typing import TextIO

from gymgate.outcomes import BROKEN, ERROR, FAIL, PASS, SKIP
from gymgate.report.fidelity import fidelity
from gymgate.report.variants import KNOWN, disagreements, known_reason
from gymgate.runfolder import PathRecord, RunFolder
from gymgate.text import reward_text
from gymgate.verdict import RunVerdict

ORDER = {BROKEN: 0, FAIL: 1, ERROR: 2, PASS: 3, SKIP: 4}


def _ordered(records: list[PathRecord]) -> list[PathRecord]:
    return sorted(records, key=lambda r: (ORDER.get(r.outcome, 9), r.path))


SHOWN_ROWS = 30  # paths a ref's own verdict lists before it counts the rest (the records hold every one)


def print_summary(judged: RunVerdict, run: RunFolder, out: TextIO) -> None:
    """A ref judged alone, as its verdict: each path that did not pass (at most SHOWN_ROWS; the passing ones are
    counted, every one is in the records), then the closing line."""
    records = [r for r in _ordered(judged.records) if r.outcome not in (PASS, SKIP)]
    rows = [(r.path, r.outcome, r.blame, reward_text(r.reward), _reason(r)) for r in records]
    rows += [("lifecycle", FAIL, "", "", f"did not stop within its bound: {p}") for p in judged.lifecycle]
    rows += [(path, "NONDET", "gym", "", line[:200]) for path, line in judged.disagreements.items()]
    if rows:
        print("", file=out)
        print(f"{'path':<56} {'outcome':<7} {'blame':<8} {'reward':>6}  reason", file=out)
    for path, outcome, blame, reward, reason in rows[:SHOWN_ROWS]:
        print(f"{path:<56} {outcome:<7} {blame:<8} {reward:>6}  {reason}", file=out)
    if len(rows) > SHOWN_ROWS:
        print(f"… {len(rows) - SHOWN_ROWS} more in {run.paths_dir}", file=out)
    known = [d for d in disagreements(judged.records).values() if d.known]
    if known:
        print(f"\nforms the verifier gets wrong, reviewed ({KNOWN}s): {len(known)}", file=out)
    replayed = list(fidelity(judged.records).values())
    if replayed:
        done, of = sum(f.reproduce for f in replayed), sum(f.replays for f in replayed)
        short = [f.line() for f in replayed if f.reproduce < f.replays]
        shown = "; ".join(short[:4]) + (f"; {len(short) - 4} more environments (results)" if len(short) > 4 else "")
        print(f"\nrecorded rollouts replayed: {done}/{of} reproduce" + (f" ({shown})" if shown else ""), file=out)
    print("\n" + summary_line(judged, run), file=out)


def _reason(record: PathRecord) -> str:
    return (record.reason.splitlines()[0] if record.reason else known_reason(record))[:110]


def summary_line(judged: RunVerdict, run: RunFolder) -> str:
    """One run's outcome counts and verdict in a line: what a bump shows of each ref while it runs (the paths
    themselves are in its report)."""
    counts = {k: sum(1 for r in judged.records if r.outcome == k) for k in ORDER}
    return (
        f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[ERROR]} errors, {counts[SKIP]} skipped"
        + (f", {counts[BROKEN]} broken" if counts[BROKEN] else "")
        + (", lifecycle check failed" if judged.lifecycle else "")
        + (f", {len(judged.disagreements)} nondeterministic" if judged.disagreements else "")
        + f" — {judged.label}; records in {run.paths_dir}"
    )


def run_document(judged: RunVerdict, run: RunFolder, cached: bool = False) -> dict:
    """A run judged alone, for machines (`accept --json` without a baseline): the verdict and every path."""
    source = run.source()
    records = _ordered(judged.records)
    return {
        "kind": "run",
        "verdict": judged.label,
        "exit_code": judged.code,
        "ref": {k: source.get(k) for k in ("name", "kind", "version", "commit", "digest")},
        "run_dir": str(run.root),
        "cached": cached,
        "outcomes": {k: sum(1 for r in records if r.outcome == k) for k in ORDER},
        "lifecycle": judged.lifecycle,
        "nondeterministic": judged.disagreements,
        "fidelity": {env: f.to_json() for env, f in fidelity(judged.records).items()},
        "paths": [
            {
                "path": r.path,
                "outcome": r.outcome,
                "blame": r.blame,
                "reward": r.reward,
                "reason": r.reason or known_reason(r),
            }
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
