"""The pin matrix: many refs, in order, each run once (or served from the cache), and the bump between each pair of
neighbours judged exactly as `accept` judges one. The last bump is the one being considered: it decides the exit.

Neighbouring bumps are compared without reruns (a stored run is never written into: the cache may serve it to other
matrices); a path that fails on one side is shown as it ran. `accept --gym-ref B --baseline A` reruns what fails.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from gymgate.compare.runs import compare_runs
from gymgate.errors import EXIT_OK, UsageError
from gymgate.harness.bump import write_reports
from gymgate.harness.executor import run_refs
from gymgate.harness.run import RefRun, RunOptions
from gymgate.refs.source import GymSource
from gymgate.results import Bump, Matrix, MatrixRef
from gymgate.runfolder import RunFolder, runs_dir


def report_dir(base: Path | None, kind: str) -> Path:
    """Where a matrix or bisect report goes by default: runs/<kind>-<UTC stamp>/."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return (base or runs_dir()) / f"{kind}-{stamp}"


def run_matrix(
    refs: list[tuple[str, GymSource]], expected: list[str], opts: RunOptions, out: Path, acks: Path | None = None
) -> Matrix:
    """Run (or serve from the cache) every ref in the order given, then compare each pair of neighbours."""
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
    return Matrix(columns, bumps, expected)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:60]


def print_matrix(matrix: Matrix, written: list[Path], out=sys.stdout) -> None:
    width = max(len(p) for p in matrix.paths) if matrix.paths else 10
    print("", file=out)
    print(f"{'path':<{width}}  " + "  ".join(f"{r.asked:<12}" for r in matrix.refs), file=out)
    for path in matrix.paths:
        cells = []
        for ref in matrix.refs:
            record = ref.records.get(path)
            cells.append(f"{(record.outcome if record else '—'):<12}")
        print(f"{path:<{width}}  " + "  ".join(cells), file=out)
    for bump in matrix.bumps:
        print(f"{bump.baseline.asked} → {bump.candidate.asked}: {bump.comparison.verdict}", file=out)
    print("written: " + ", ".join(str(p) for p in written), file=out)


def matrix_command(args) -> int:
    """`gymgate matrix`: resolve every ref first, run them in order, write the matrix reports; the last bump's
    verdict is the exit code."""
    from gymgate.harness.accept import planned, require_judged_attempts
    from gymgate.harness.environments import judged_environments, with_derived
    from gymgate.refs import resolve_ref
    from gymgate.refs.pins import pins_in_order
    from gymgate.report.matrix import write_matrix_reports

    require_judged_attempts(args)
    envs = judged_environments(args)
    asked = args.refs or pins_in_order()
    if args.only is not None and args.only not in asked:
        print(f"matrix: {args.only} is not among the refs asked for ({', '.join(asked)}); nothing to run")
        return EXIT_OK
    refs = [(ref, resolve_ref(ref, args.gym_repo)) for ref in asked]  # every ref resolves before anything runs
    envs = with_derived(args, envs, [source for _, source in reversed(refs)])
    # The paths are the whole matrix's (each ref replays every ref's recordings), also for one ref of it (--only):
    # its run has the inputs the report over every ref asks for, and is served to it.
    expected, opts = planned(envs, [source for _, source in reversed(refs)], args)
    if args.only is not None:
        refs = [(ref, source) for ref, source in refs if ref == args.only]
    out = args.out or report_dir(args.runs_dir, "matrix")  # made when there is something to write
    matrix = run_matrix(refs, expected, opts, out, args.acks)
    print_matrix(matrix, write_matrix_reports(matrix, out))
    return matrix.exit_code
