"""Errors that end a gymgate command, and the exit codes every command ends with, declared once (EXIT_CODES: what
`--help`, the generated reference and the verdicts read).

A script can tell apart what it must act on: 1 is Gym's fault (judged), 2 the caller's (nothing ran), 3 the
machine's or the run's (nothing could be judged: rerun), 4 gymgate's own, 130 a person's Ctrl-C.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExitCode:
    code: int
    name: str
    meaning: str


EXIT_CODES = (
    ExitCode(0, "clean", "judged: no regression, and every contract change is acknowledged"),
    ExitCode(
        1,
        "regression",
        "judged: a path regressed, broke, turned flaky on the candidate or changed its contract unreviewed, or a Gym "
        "did not stop (the report names each)",
    ),
    ExitCode(2, "usage", "the command line, a GYMGATE_* variable or a named ref could not be used: nothing ran"),
    ExitCode(
        3,
        "unjudged",
        "nothing could be judged: the machine or a Gym service could not run the paths (infrastructure), a path is "
        "unjudged, the baseline is broken, or the run did not finish — rerun, never a pass",
    ),
    ExitCode(4, "internal", "gymgate itself crashed: one line names the exception, the trace is in the run folder"),
    ExitCode(130, "interrupted", "Ctrl-C or SIGTERM: every process the run started was stopped; no verdict"),
)
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNJUDGED, EXIT_INTERNAL, EXIT_INTERRUPTED = (e.code for e in EXIT_CODES)
JUDGED = (EXIT_OK, EXIT_FAILED)  # the codes of a verdict; any other code judged nothing
DECLARED = tuple(e.code for e in EXIT_CODES)  # every code gymgate ends with; another is a death without one


class GymgateError(Exception):
    """A failure with a message meant for a person; ends the command with ``exit_code``."""

    exit_code = EXIT_UNJUDGED


class UsageError(GymgateError):
    """The user asked for something gymgate cannot interpret (bad ref, bad flag)."""

    exit_code = EXIT_USAGE


class InfraError(GymgateError):
    """The machine could not do what was asked (no Python, lock failed, server died)."""


class StaleLockError(InfraError):
    """A committed lock no longer matches its project file."""


class BuildError(InfraError):
    """This Gym ref cannot be locked, built or started on this machine: its runs are BROKEN, not unjudged.
    (A stale or mismatched committed lock is gymgate's own mistake and stays a plain InfraError.)"""
