"""The pin matrix: many refs, in order, each run once (or served from the cache), and the bump between each pair of
neighbours judged exactly as `accept` judges one. The last bump is the one being considered: it decides the exit.

Neighbouring bumps are compared without reruns (a stored run is never written into: the cache may serve it to other
matrices); a path that fails on one side is shown as it ran. `accept --gym-ref B --baseline A` reruns what fails.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TextIO

from gymgate import streams
from gymgate.compare.acks import Reviews
from gymgate.errors import EXIT_OK, UsageError
from gymgate.harness.accept import planned, require_judged_attempts
from gymgate.harness.asked import Asked
from gymgate.harness.environments import judged_environments, with_derived
from gymgate.harness.run_options import RefRun, RunOptions
from gymgate.refs import resolve_ref
from gymgate.refs.pins import pins_in_order
from gymgate.refs.source import GymSource
from gymgate.results import Bump, Matrix, MatrixRef
from gymgate.runfolder import RunFolder, runs_dir
from gymgate.verdict import RUN_VERDICTS, combined_exit


def report_dir(base: Path | None, kind: str) -> Path:
    """Where a matrix or bisect report goes by default: runs/<kind>-<UTC stamp>/."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return (base or runs_dir()) / f"{kind}-{stamp}"


def run_matrix(
    refs: list[tuple[str, GymSource]],
    expected: list[str],
    opts: RunOptions,
    out: Path,
    acks: Reviews | None = None,
    gym_tests: tuple[str, list] = ("none", []),
) -> Matrix:
    """Run (or serve from the cache) every ref in the order given, then compare each pair of neighbours (and, with
    `gym_tests` = (scope, environments), each release's own tests against its neighbour: harness/gym_tests.py)."""
    from gymgate.compare.runs import compare_runs  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.harness.executor import run_refs  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.harness.reports import write_reports  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    if len({source.digest for _, source in refs}) != len(refs):
        raise UsageError("the matrix names the same Gym twice: " + ", ".join(asked for asked, _ in refs))
    calls = [
        RefRun(source, expected, opts, reuse=True, title=f"matrix {index}/{len(refs)}: {asked}")
        for index, (asked, source) in enumerate(refs, 1)
    ]
    columns = []
    for (asked, source), result in zip(refs, run_refs(calls), strict=True):  # on a cluster: every ref at once
        records = RunFolder(result.dir).records(expected) if result.dir.is_dir() else {}
        columns.append(MatrixRef(asked, source, result, records))
    bumps = []
    for before, after in zip(columns, columns[1:], strict=False):
        name = f"{_slug(before.asked)}-to-{_slug(after.asked)}"
        comparison = compare_runs(before.run.dir, after.run.dir, acks)
        target = out / "bumps" / name
        target.mkdir(parents=True, exist_ok=True)
        text, _ = write_reports(comparison, target)
        print(f"== {before.asked} → {after.asked}: {comparison.verdict}", flush=True)
        bumps.append(Bump(before, after, comparison, target, text))
        if gym_tests[0] != "none":
            from gymgate.harness.gym_tests import judge_bump_tests  # noqa: PLC0415 - only when Gym's own tests are asked for

            scope, envs = gym_tests
            judged = judge_bump_tests(before.source, after.source, envs, scope, opts, after.run.dir, acks, target)
            bumps[-1].gym_tests, bumps[-1].gym_tests_code = judged, judged.code
            bumps[-1].gym_tests_verdict = judged.verdict
    return Matrix(columns, bumps, expected)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:60]


def print_matrix(matrix: Matrix, written: list[Path], out: TextIO) -> None:
    """The matrix's verdict: one line per bump (each ref's path table is in matrix.md, not on the terminal)."""
    print("", file=out)
    for bump in matrix.bumps:
        print(f"{bump.baseline.asked} → {bump.candidate.asked}: {bump.comparison.verdict}", file=out)
        if bump.gym_tests is not None:
            print(f"  {bump.gym_tests_verdict}", file=out)
    if not matrix.bumps:
        for ref in matrix.refs:
            print(f"{ref.asked}: {RUN_VERDICTS.get(ref.run.code, 'could not judge')}", file=out)
    print("written: " + ", ".join(str(p) for p in written), file=out)


def matrix_document(matrix: Matrix, written: list[Path]) -> dict:
    """The matrix's verdict for machines (`matrix --json`): each ref's run and each bump's verdict."""
    return {
        "kind": "matrix",
        "exit_code": matrix.exit_code,
        "refs": [{"ref": r.asked, "run_dir": str(r.run.dir), "exit_code": r.run.code} for r in matrix.refs],
        "bumps": [
            {
                "baseline": b.baseline.asked,
                "candidate": b.candidate.asked,
                "verdict": b.comparison.verdict,
                "exit_code": b.comparison.exit_code,
                "report_dir": str(b.out),
                **({"gym_tests": b.gym_tests.to_json()} if b.gym_tests else {}),
            }
            for b in matrix.bumps
        ],
        "written": [str(p) for p in written],
    }


def matrix_command(
    refs: list[str],
    only: str | None,
    gym_repo: str | None,
    out: Path | None,
    runs_dir: Path | None,
    acks: Reviews,
    asked: Asked,
    run: RunOptions,
    gym_tests: str = "none",
) -> tuple[int, dict]:
    """`gymgate matrix`: resolve every ref first, run them in order, write the matrix reports; the last bump's
    verdict is the exit code (with `--gym-tests`, combined with its verdict on Gym's own tests)."""
    from gymgate.report.matrix import write_matrix_reports  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    require_judged_attempts(run)
    envs, uncased = judged_environments(asked)
    names = refs or pins_in_order()
    if only is not None and only not in names:
        print(f"matrix: {only} is not among the refs asked for ({', '.join(names)}); nothing to run")
        return EXIT_OK, {"kind": "matrix", "exit_code": EXIT_OK, "refs": [], "bumps": [], "written": []}
    resolved = [(ref, resolve_ref(ref, gym_repo)) for ref in names]  # every ref resolves before anything runs
    envs = with_derived(asked, envs, uncased, [source for _, source in reversed(resolved)])
    # The paths are the whole matrix's (each ref replays every ref's recordings), also for one ref of it (--only):
    # its run has the inputs the report over every ref asks for, and is served to it.
    expected, opts = planned(envs, [source for _, source in reversed(resolved)], asked, run)
    if only is not None:
        resolved = [(ref, source) for ref, source in resolved if ref == only]
    out = out or report_dir(runs_dir, "matrix")  # made when there is something to write
    matrix = run_matrix(resolved, expected, opts, out, acks, (gym_tests, envs))
    written = write_matrix_reports(matrix, out)
    print_matrix(matrix, written, streams.view())
    code, document = matrix.exit_code, matrix_document(matrix, written)
    last = matrix.bumps[-1].gym_tests if matrix.bumps else None
    if last is not None:
        code = combined_exit(code, last.code)
        document["exit_code"] = code
    return code, document
