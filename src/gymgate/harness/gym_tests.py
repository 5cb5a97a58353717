"""`accept --gym-tests SCOPE`: after the bump's comparison, each release's own tests run against the other release
(gymgate.gymtests), into the candidate's run folder (`gym-tests/`); their verdict is printed after the bump's, and a
test of the baseline the candidate breaks fails the gate like a regression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gymgate import streams
from gymgate.compare import acks as ack_files
from gymgate.compare.runs import compare_runs
from gymgate.gymtests import report
from gymgate.gymtests.bump import GymTestsRun, judge_gym_tests
from gymgate.harness.reports import write_reports
from gymgate.harness.run import prepare
from gymgate.harness.run_options import RunOptions
from gymgate.report.outputs import compared_baseline
from gymgate.runfolder import RunFolder
from gymgate.verdict import combined_exit


def folder_of(run_dir: Path) -> Path:
    """Where a candidate's run keeps its bump's verdict on Gym's own tests (the run folder's layout says)."""
    return RunFolder(run_dir).gym_tests_dir


def judge_bump_tests(
    baseline,
    candidate,
    envs: list,
    scope: str,
    opts: RunOptions,
    run_dir: Path,
    acks: ack_files.Reviews | None = None,
    report_dir: Path | None = None,
) -> GymTestsRun:
    """Both refs' environments (reused), both releases' tests of `scope` for the run's environments (cases and
    derived alike), judged and reviewed into the candidate's run folder (`run_dir`); the verdict printed, its
    reports written, and the bump's reports (in `report_dir`, default the candidate's run folder) written again to
    show it."""
    prepared = {source.name: prepare(source, opts.wide) for source in (baseline, candidate)}
    run = judge_gym_tests(
        baseline,
        candidate,
        envs,
        scope,
        prepared,
        folder_of(run_dir),
        opts.workers,
        acks or ack_files.Reviews(),
        reuse=opts.cache,
    )
    report.write(run)
    print("\n".join(report.terminal_lines(run)), file=streams.view(), flush=True)
    out = report_dir or run_dir
    compared = compared_baseline(out)
    if compared is not None:
        write_reports(compare_runs(compared, run_dir, acks), out)
    return run


def with_gym_tests(code: int, document: dict[str, Any], run: GymTestsRun) -> tuple[int, dict[str, Any]]:
    """The command's exit code and verdict document with Gym's own tests in: a regression either way fails (1)."""
    combined = combined_exit(code, run.code)
    return combined, {**document, "exit_code": combined, "gym_tests": run.to_json()}
