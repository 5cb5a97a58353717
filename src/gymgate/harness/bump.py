"""A Gym bump judged end to end: baseline and candidate (each served from the cache when none of its inputs changed
and its stored run is clean), reruns of what did not pass on both refs, then the comparison whose verdict is the
exit code."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from gymgate.acceptance.limits import DEADLINE_FLOOR_S, DEADLINE_MULTIPLE, derive_deadlines
from gymgate.atomic import write_text_atomic
from gymgate.ci.github import comparison_annotations, group, publish
from gymgate.compare.attempts import labels
from gymgate.compare.runs import compare_runs
from gymgate.errors import EXIT_ERROR
from gymgate.harness.executor import run_ref
from gymgate.harness.reruns import real_attempt, run_reruns
from gymgate.harness.run import RunOptions
from gymgate.refs.source import GymSource
from gymgate.report.html import write_html
from gymgate.report.markdown import render_markdown, render_terminal
from gymgate.report.outputs import REPORT_FILES, write_junit, write_results, write_retry
from gymgate.results import BumpResult
from gymgate.runfolder import RunFolder
from gymgate.verdict import HARNESS_ERROR, NO_RECORD, unjudgeable


def judge_bump(
    baseline: GymSource,
    candidate: GymSource,
    expected: list[str],
    opts: RunOptions,
    reruns: int,
    narrowed: bool,
    acks: Path | None = None,
    verbose: bool = False,
) -> BumpResult:
    print(f"== baseline {baseline.name}", flush=True)
    base = run_ref(baseline, expected, opts, reuse=True, narrowed=narrowed)
    why = unjudgeable("baseline", baseline.name, base.code, base.broken)
    if why:
        print(f"gymgate: error: {why}; see {base.dir}", file=sys.stderr)
        return BumpResult(base.dir, EXIT_ERROR, why)
    opts = with_baseline_deadlines(opts, RunFolder(base.dir))
    print(f"== candidate {candidate.name}", flush=True)
    # A cached candidate needs no reruns of its own; one whose baseline must be asked again runs fresh, so every
    # rerun of the bump is stored with the candidate run it belongs to.
    unjudged = {HARNESS_ERROR, NO_RECORD} & set(labels(RunFolder(base.dir)).values())
    cand = run_ref(candidate, expected, opts, reuse=not unjudged, narrowed=narrowed)
    why = unjudgeable("candidate", candidate.name, cand.code, cand.broken)
    if why:
        print(f"gymgate: error: {why}; see {cand.dir}", file=sys.stderr)
        return BumpResult(cand.dir, EXIT_ERROR, why)
    with group(f"reruns: {baseline.name} -> {candidate.name}"):
        run_reruns((baseline, base.dir), (candidate, cand.dir), reruns, real_attempt(opts))
    return BumpResult(cand.dir, compare_and_report(base.dir, cand.dir, cand.dir, full=verbose, acks=acks))


def with_baseline_deadlines(opts: RunOptions, baseline: RunFolder) -> RunOptions:
    """The candidate's options with each path's own deadline, derived from what the baseline measured for it
    (acceptance/limits.py), so a hang costs a fraction of --path-timeout; --path-timeout still caps each."""

    deadlines = {p: min(s, opts.path_timeout) for p, s in derive_deadlines(baseline.records().values()).items()}
    if deadlines:
        print(
            f"path deadlines: {min(deadlines.values()):g}-{max(deadlines.values()):g} s "
            f"({DEADLINE_MULTIPLE:g}x the baseline's slowest attempt, at least {DEADLINE_FLOOR_S:g} s, "
            f"at most --path-timeout {opts.path_timeout:g} s)",
            flush=True,
        )
    return replace(opts, deadlines=deadlines)


def write_reports(comparison, out_dir: Path) -> tuple[str, list[Path]]:
    """Every report file of one comparison into `out_dir`: report.md (returned), results.json, junit.xml, retry.txt,
    report.html."""

    text = render_markdown(comparison)
    written = [write_text_atomic(out_dir / REPORT_FILES["markdown"], text)]
    written += [
        write_results(comparison, out_dir),
        write_junit(comparison, out_dir),
        write_retry(comparison, out_dir),
        write_html(comparison, out_dir, REPORT_FILES["html"]),
    ]
    return text, written


def compare_and_report(baseline: Path, candidate: Path, out_dir: Path, full: bool, acks: Path | None = None) -> int:
    """Compare two stored runs, write every report file into `out_dir`, print the verdict and summary (one screen;
    `full`: all of report.md)."""

    comparison = compare_runs(baseline, candidate, acks)
    text, written = write_reports(comparison, out_dir)
    publish(text, comparison_annotations(comparison))
    if full:
        print("\n" + text)
        print("written: " + ", ".join(str(p) for p in written))
    else:  # report.md by its whole path, the files beside it by name
        print("\n" + render_terminal(comparison, ", ".join([str(written[0]), *(p.name for p in written[1:])])))
    return comparison.exit_code
