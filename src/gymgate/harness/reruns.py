"""Flaky or real: every non-PASS candidate path (and every path the baseline could not judge) runs again on both
refs in fresh Gym instances (a new pytest session, so a new Ray cluster and new Gym servers) until its outcomes are
mixed, the candidate has failed the same way in two Gym instances (reproduced: a further attempt cannot make it
pass the gate, since a candidate that passes only sometimes is regressed too), or the attempts are used up. A
reviewed known defect (gymgate.variants.known) is not asked again: its disagreement is on record. The attempts are
stored in the candidate's run folder (runfolder/folder.py; compare/attempts.py reads them back); a stored baseline
run is never modified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gymgate.compare.attempts import attempt_labels, labels
from gymgate.harness.executor import run_ref
from gymgate.harness.run_options import RunOptions
from gymgate.outcomes import BROKEN, ERROR, FAIL, SKIP
from gymgate.refs.source import GymSource
from gymgate.results import RunResult
from gymgate.runfolder import RunFolder
from gymgate.verdict import HARNESS_ERROR, NO_RECORD, known_defect, mixed

# A pass needs no second opinion; skip (the config is absent) and broken are deterministic.
RERUN_CANDIDATE = (FAIL, ERROR, HARNESS_ERROR, NO_RECORD)
RERUN_BASELINE = (HARNESS_ERROR, NO_RECORD)  # the baseline said nothing about this path: ask it again

# (source, paths, run folder) -> the attempt's run; tests inject a fake, the CLI runs the real matrix.
RunAttempt = Callable[[GymSource, list[str], Path], RunResult]


def targets(candidate: dict[str, str | None], baseline: dict[str, str | None]) -> list[str]:
    """Paths worth a second look: not passing on the candidate, or not judged on the baseline (never against a
    broken baseline)."""
    return sorted(
        p
        for p, got in candidate.items()
        if baseline.get(p) != BROKEN and (got in RERUN_CANDIDATE or baseline.get(p) in RERUN_BASELINE)
    )


def run_reruns(
    baseline: tuple[GymSource, Path],
    candidate: tuple[GymSource, Path],
    attempts: int,
    run_attempt: RunAttempt,
) -> None:
    """Rerun each target up to `attempts` more times on both refs; a path stops once either side is mixed
    (flaky is decided). The outcomes are read back from disk by compare/attempts.py."""
    (base_source, base_dir), (cand_source, cand_dir) = baseline, candidate
    cand_run = RunFolder(cand_dir)
    runs = {"candidate": cand_run, "baseline": RunFolder(base_dir)}
    first = {role: labels(run) for role, run in runs.items()}
    known = {p for p, record in cand_run.records().items() if known_defect(record)}  # reviewed: nothing to re-ask
    chosen = [p for p in targets(first["candidate"], first["baseline"]) if p not in known]
    every = {role: attempt_labels(run) for role, run in runs.items()}  # the attempts each record holds
    history = {role: {p: every[role][p] for p in chosen if p in every[role]} for role in every}
    manifest = {"baseline_run": base_dir.name, "attempts": attempts, "paths": chosen, "done": 1}
    if not chosen or attempts <= 0:
        return
    cand_run.write_reruns_manifest(manifest)
    sessions: dict[str, list[str | None]] = {p: [first["candidate"][p]] for p in chosen}  # one label per Gym
    for n in range(2, attempts + 2):
        active = [
            p
            for p in chosen
            if not any(mixed(history[role].get(p, [])) for role in history) and not reproduced(sessions[p])
        ]
        if not active:
            break
        print(f"== rerun {n - 1}/{attempts} of {len(active)} path(s) in fresh Gym instances: {', '.join(active)}")
        for role, source in (("candidate", cand_source), ("baseline", base_source)):
            paths = [p for p in active if p in history[role] and history[role][p][0] != SKIP]
            if not paths:
                continue
            got = attempt_labels(RunFolder(run_attempt(source, paths, cand_run.attempt(role, n).root).dir))
            for path in paths:
                history[role][path].extend(got.get(path, [NO_RECORD]))
                if role == "candidate":
                    sessions[path].append(got.get(path, [NO_RECORD])[0])
        cand_run.write_reruns_manifest({**manifest, "done": n})


def reproduced(sessions: list[str | None]) -> bool:
    """The candidate failed the same way (FAIL, or an ERROR blamed on Gym) in its last two Gym instances."""
    return len(sessions) >= 2 and sessions[-1] == sessions[-2] and sessions[-1] in (FAIL, ERROR)


def real_attempt(opts: RunOptions) -> RunAttempt:
    """Attempts through the real matrix; never self-tests, never reused."""
    quiet = replace(opts, selftest=False)

    def attempt(source: GymSource, paths: list[str], run_dir: Path) -> RunResult:
        return run_ref(source, paths, quiet, run_dir=run_dir, narrowed=True)

    return attempt
