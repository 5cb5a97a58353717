"""The machine-readable outputs of a comparison, each written atomically into the candidate run:
results.json (every record plus provenance), junit.xml (one test case per path and ref), retry.txt (the
paths worth rerunning, accepted back by `--paths @retry.txt`) and report.html (self-contained page)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import time
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from gymgate import __version__
from gymgate.atomic import write_json_atomic, write_text_atomic
from gymgate.compare.lockdiff import packages
from gymgate.compare.observation import Change, side_by_side
from gymgate.compare.runs import Comparison, PathComparison
from gymgate.errors import UsageError
from gymgate.outcomes import ERROR, PASS, SKIP
from gymgate.runfolder import RunFolder, RunMark
from gymgate.streams import SCHEMA
from gymgate.verdict import (
    BROKEN_CATEGORY,
    FAILING,
    FLAKY,
    REGRESSED,
    SKIPPED,
    UNJUDGED,
)

RETRY_CATEGORIES = (REGRESSED, UNJUDGED, FLAKY, BROKEN_CATEGORY)
RESULTS = "results.json"
RETRY = "retry.txt"  # the paths worth rerunning, one id per line: `--paths @retry.txt`


def _run_provenance(info: dict[str, Any]) -> dict[str, Any]:
    run = RunFolder(Path(info["dir"]))
    lock = run.lock
    found = packages(lock) if lock.is_file() else {}
    env = run.environment()
    mark = run.mark() or RunMark()
    return {
        "ref": info.get("name"),
        "kind": info.get("kind"),
        "version": info.get("version"),
        "artifact_digest": info.get("digest"),
        "commit": info.get("commit"),
        "run_dir": str(run.root),
        "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else None,
        "python": env.get("python"),
        "interpreter": env.get("interpreter"),  # path and exact build (sys.version; a gymgate build's source digest)
        "ray": found.get("ray"),
        "environment_key": env.get("key"),
        "started": mark.started,
        "finished": mark.finished,
    }


REPORT_FILES = {
    "markdown": "report.md",
    "html": "report.html",
    "results": RESULTS,
    "junit": "junit.xml",
    "comment": "comment.md",  # report.md cut to fit a GitHub comment (ci/github.py pr_comment)
}


def summary(comparison: Comparison, directory: Path) -> dict[str, Any]:
    """The verdict for machines: results.json's "summary" and what `--json` prints (bots read this, not the rest)."""

    def ref(info: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": info.get("name"),
            "version": info.get("version"),
            "commit": info.get("commit"),
            "run_dir": info.get("dir"),
        }

    counts: dict[str, int] = {}
    for item in comparison.paths:
        counts[item.category] = counts.get(item.category, 0) + 1
    return {
        "kind": "comparison",
        "verdict": comparison.verdict,
        "exit_code": comparison.exit_code,
        "baseline": ref(comparison.baseline),
        "candidate": ref(comparison.candidate),
        "rl_profile": comparison.profile.to_json(),
        "categories": counts,
        "paths": [
            {
                "path": p.path,
                "category": p.category,
                "baseline": p.baseline,
                "candidate": p.candidate,
                "blame": p.blame,
                "flaky_on": p.flaky_on,
                "nondeterministic": _disagreements_json(p),
                "causes": p.causes,
            }
            for p in comparison.paths
        ],
        "report": {kind: str(directory / name) for kind, name in REPORT_FILES.items()},
    }


def _disagreements_json(item: PathComparison) -> dict[str, Any]:
    """Each ref whose attempts of this path disagreed: the two attempts, the first differing value, the line."""
    return {role: {**d.to_json(), "line": d.line(role)} for role, d in item.disagreements.items()}


def write_results(comparison: Comparison, directory: Path) -> Path:
    base, cand = comparison.baseline_records, comparison.candidate_records
    data = {
        "schema": SCHEMA,
        "summary": summary(comparison, directory),
        "verdict": comparison.verdict,
        "exit_code": comparison.exit_code,
        "broken": {"baseline": comparison.baseline_broken, "candidate": comparison.candidate_broken},
        "lifecycle": comparison.lifecycle,
        "provenance": {
            "baseline": _run_provenance(comparison.baseline),
            "candidate": _run_provenance(comparison.candidate),
            "rl_profile": comparison.profile.to_json(),
            "harness": __version__,
            "host": socket.gethostname(),
            "platform": platform.platform(),
            "compared_at": time.time(),
        },
        "paths": [
            {
                "path": p.path,
                "category": p.category,
                "blame": p.blame,
                "flaky_on": p.flaky_on,
                "baseline": base[p.path].to_json() if p.path in base else None,
                "candidate": cand[p.path].to_json() if p.path in cand else None,
                "changed": [_change_json(c) for c in p.changes],
                "attempts": p.attempts,
                "nondeterministic": _disagreements_json(p),
                "root_causes": p.causes,
            }
            for p in comparison.paths
        ],
    }
    data["acknowledgements"] = {
        "files": [str(f) for f in comparison.acks.files],
        "covered": comparison.acks.covered,
        "stale": [a.where for a in comparison.acks.stale],
        "refused": [a.where for a in comparison.acks.refused],
        "overridden": comparison.acks.overridden,
    }
    return write_json_atomic(directory / RESULTS, data)


def read_summary(directory: Path) -> dict[str, Any]:
    """The summary of the comparison written into `directory` (what `--json` prints)."""
    try:
        return json.loads((directory / RESULTS).read_text())["summary"]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{directory / RESULTS} holds no comparison summary ({exc})") from None


def not_compared(directory: Path, code: int, why: str) -> dict[str, Any]:
    """The `--json` document of a bump that could not be compared (a ref that could not be judged)."""
    return {"kind": "comparison", "verdict": f"cannot judge: {why}", "exit_code": code, "run_dir": str(directory)}


def compared_baseline(directory: Path) -> Path | None:
    """The baseline run a comparison written into `directory` was judged against, or None without one."""
    try:
        return Path(json.loads((directory / RESULTS).read_text())["provenance"]["baseline"]["run_dir"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _change_json(change: Change) -> dict[str, Any]:
    """One change for machines: the exact field, its class, digests that identify the values, and what a reader
    sees of them (long values cut around their first difference)."""
    before, after = side_by_side(change.before, change.after)
    _, before_digest, after_digest = change.key
    return {
        "field": change.field,
        "kind": change.kind,
        "before": before,
        "after": after,
        "before_digest": before_digest,
        "after_digest": after_digest,
        "acknowledged": change.ack,
        "ack": change.ack_file,
    }


def write_junit(comparison: Comparison, directory: Path) -> Path:
    """Suite "comparison": one test case per path whose result is its category (regressed and broken fail,
    unjudged errors, flaky and the rest pass with the category in their output). Then one suite per ref with
    that ref's own outcomes, from the same comparison."""
    xml = JUnitXml(name="gymgate")
    verdict = TestSuite(f"comparison {comparison.baseline.get('name')} -> {comparison.candidate.get('name')}")
    for item in comparison.paths:
        verdict.add_testcase(_category_case(item))
    if comparison.lifecycle.get("candidate"):
        case = TestCase("lifecycle", classname="gymgate.comparison")
        case.result = [Failure("lifecycle: " + "; ".join(comparison.lifecycle["candidate"])[:500])]
        verdict.add_testcase(case)
    xml.add_testsuite(verdict)
    for side, info, records in (
        ("baseline", comparison.baseline, comparison.baseline_records),
        ("candidate", comparison.candidate, comparison.candidate_records),
    ):
        suite = TestSuite(f"{side} {info.get('name')}")
        for name, record in sorted(records.items()):
            case = TestCase(name, classname=f"gymgate.{side}.{info.get('name')}")
            reason = record.reason.splitlines()[0][:500] if record.reason else ""
            blame = f" [{record.blame}]" if record.blame else ""
            if record.outcome == ERROR:
                case.result = [Error(f"ERROR{blame}: {reason}")]
            elif record.outcome == SKIP:
                case.result = [Skipped(reason)]
            elif record.outcome != PASS:
                case.result = [Failure(f"{record.outcome}{blame}: {reason}")]
            suite.add_testcase(case)
        xml.add_testsuite(suite)
    target = directory / REPORT_FILES["junit"]
    tmp = target.with_name(f".junit.{os.getpid()}.xml")
    xml.write(str(tmp))
    os.replace(tmp, target)
    return target


def _category_case(item: PathComparison) -> TestCase:
    case = TestCase(item.path, classname="gymgate.comparison")
    message = f"{item.category}: {item.baseline or '—'} -> {item.candidate or '—'}"
    if item.blame:
        message += f" [{item.blame}]"
    if item.reason:
        message += f" — {item.reason.splitlines()[0][:400]}"
    elif item.causes:
        message += " — " + "; ".join(item.causes[:5])
    if item.category in FAILING:
        case.result = [Failure(message)]
    elif item.category == UNJUDGED:
        case.result = [Error(message)]
    elif item.category == SKIPPED:
        case.result = [Skipped(message)]
    case.system_out = f"category: {item.category}"
    return case


def write_retry(comparison: Comparison, directory: Path) -> Path:
    lines = [p.path for p in comparison.paths if p.category in RETRY_CATEGORIES]
    return write_text_atomic(directory / RETRY, "".join(f"{line}\n" for line in lines))


def junit_categories(path: Path) -> dict[str, str]:
    """The category of every path as junit.xml states it (the reader of `_category_case`)."""
    found = {}
    for suite in JUnitXml.fromfile(str(path)):
        if not suite.name.startswith("comparison"):
            continue
        for case in suite:
            found[case.name] = (case.system_out or "").removeprefix("category: ")
    return found
