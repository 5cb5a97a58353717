"""A comparison's every report written (report.md, results.json, junit.xml, retry.txt, report.html), the CI job's
summary and annotations, and the terminal's view: for a bump (harness/bump.py), a stored pair (`gymgate compare`),
merged shards, a matrix's steps and a bisection's last good and first bad commits alike."""

from __future__ import annotations

from pathlib import Path

from gymgate import streams
from gymgate.atomic import write_text_atomic
from gymgate.ci.github import comparison_annotations, pr_comment, publish
from gymgate.compare.acks import Reviews
from gymgate.compare.runs import compare_runs
from gymgate.report.html import write_html
from gymgate.report.markdown import render_markdown
from gymgate.report.outputs import REPORT_FILES, write_junit, write_results, write_retry
from gymgate.report.terminal import print_terminal


def write_reports(comparison, out_dir: Path) -> tuple[str, list[Path]]:
    """Every report file of one comparison into `out_dir`: report.md (returned), results.json, junit.xml, retry.txt,
    report.html, and comment.md (report.md cut to fit a PR comment)."""

    text = render_markdown(comparison)
    written = [write_text_atomic(out_dir / REPORT_FILES["markdown"], text)]
    written += [
        write_results(comparison, out_dir),
        write_junit(comparison, out_dir),
        write_retry(comparison, out_dir),
        write_html(comparison, out_dir, REPORT_FILES["html"]),
        write_text_atomic(out_dir / REPORT_FILES["comment"], pr_comment(text)),
    ]
    return text, written


def compare_and_report(baseline: Path, candidate: Path, out_dir: Path, full: bool, acks: Reviews | None = None) -> int:
    """Compare two stored runs, write every report file into `out_dir`, print the verdict and summary (one screen;
    `full`: all of report.md)."""

    comparison = compare_runs(baseline, candidate, acks)
    text, written = write_reports(comparison, out_dir)
    publish(text, comparison_annotations(comparison))
    out = streams.view()
    if full:
        print("\n" + text, file=out)
        print("written: " + ", ".join(str(p) for p in written), file=out)
    else:  # report.md by its whole path, the files beside it by name
        print_terminal(comparison, ", ".join([str(written[0]), *(p.name for p in written[1:])]), out_dir, out)
    out.flush()
    return comparison.exit_code
