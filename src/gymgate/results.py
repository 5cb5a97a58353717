"""What the orchestrators (harness/) produce and the renderers (report/) show: one ref's run, a matrix and its
bumps, a bisection and its steps. Below both, so a renderer is typed on values, not on the code that made them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gymgate.refs.source import GymSource
from gymgate.runfolder import PathRecord
from gymgate.verdict import BisectVerdict, RunVerdict, matrix_exit

if TYPE_CHECKING:  # a type only: importing the comparison here would load it wherever a run result is made
    from gymgate.compare.runs import Comparison


@dataclass(frozen=True)
class RunResult:
    dir: Path
    code: int  # the run's own verdict: 0 clean, 1 failures (or broken), 3 not judged
    broken: str = ""  # why this ref could not be locked or built, if it could not
    cached: bool = False  # served from a stored run (nothing ran)
    judged: RunVerdict | None = None  # what decided `code` (gymgate.compare.alone.judge_run)


@dataclass(frozen=True)
class BumpResult:
    dir: Path  # the run holding the bump's reports: the candidate's (or the baseline's, when it cannot be judged)
    code: int
    why_not_compared: str = ""  # set when no comparison was made


@dataclass
class MatrixRef:
    """One column of the matrix: the ref as asked for, what it resolved to, and its run."""

    asked: str
    source: GymSource
    run: RunResult
    records: dict[str, PathRecord] = field(default_factory=dict)


@dataclass
class Bump:
    """The comparison of two neighbours, and where its full report set was written."""

    baseline: MatrixRef
    candidate: MatrixRef
    comparison: Comparison
    out: Path
    report: str  # its report.md, as written into `out`
    gym_tests: Any = None  # its verdict on Gym's own tests (gymgate.gymtests.bump.GymTestsRun), when asked for
    gym_tests_verdict: str = ""  # that verdict's line and exit code, for the reports
    gym_tests_code: int | None = None


@dataclass
class Matrix:
    refs: list[MatrixRef]
    bumps: list[Bump]
    paths: list[str]

    @property
    def exit_code(self) -> int:
        """Decided in gymgate.verdict (matrix_exit): the last bump's verdict, or with one ref that ref's own."""
        last = self.bumps[-1].comparison if self.bumps else None
        return matrix_exit(last, [(r.run.code, bool(r.run.broken)) for r in self.refs])


@dataclass
class Step:
    """One commit tried: what it was judged, and from which runs."""

    commit: str
    subject: str
    verdict: BisectVerdict
    why: str
    runs: list[Path] = field(default_factory=list)


@dataclass
class BisectResult:
    good: GymSource
    bad: GymSource
    paths: list[str]
    commits: list[str]  # first-parent history after good, up to and including bad
    steps: list[Step]
    last_good: str  # a commit (or the good ref's)
    first_bad: str | None  # None when skipped commits hide it: then `suspects` holds every candidate
    suspects: list[str] = field(default_factory=list)
    runs: dict[str, Path] = field(default_factory=dict)  # commit -> the run that decided it
