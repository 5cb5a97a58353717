"""The paths of a selection, kind by kind in their declared order, per environment: its case's paths, their fault
paths, a replay of each recording of its server the Gyms being judged ship, then the variants of those answers. A
bump replays the union of both refs' recordings (by content) on both refs; the harness plans once and hands the run
the plan itself (run folder `plan.jsonl`, gymgate.kinds.planfile); a session started by hand plans from its own Gym."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gymgate.cases.case import load_case, shipped_row
from gymgate.cases.environments import Environment
from gymgate.kinds import kinds
from gymgate.kinds.protocol import Planning
from gymgate.paths.spec import PathSpec
from gymgate.recordings.read import GymFiles, Recording, data_dir, read_recordings
from gymgate.refs.distribution import Distribution
from gymgate.refs.source import GymSource


def recordings_of(files: GymFiles, envs: Iterable[Environment], gym: str) -> list[Recording]:
    """Every recording the Gym ships for these environments' servers."""
    found: list[Recording] = []
    for env in envs:
        if not env.replays:
            continue
        if env.has_case:
            found += read_recordings(files, env.name, data_dir(env.config), load_case(env).file, gym)
        else:  # recordings stay in the server's data/ when its config and rows moved to environments/ (0.7.0)
            found += read_recordings(files, env.name, f"{env.server_dirs[0]}/data", env.example, gym)
    return found


def union(*sources: Iterable[Recording]) -> list[Recording]:
    """Recordings of several Gyms, each content once: the first source's copy (the candidate's in a bump), unless
    only a later source ships the row it was recorded on (then that one's: a row is what makes it replayable)."""
    seen: dict[tuple[str, str], Recording] = {}
    for source in sources:
        for recording in source:
            key = (recording.env, recording.key)
            if key not in seen or (seen[key].unreplayable and not recording.unreplayable):
                seen[key] = recording
    return list(seen.values())


def case_rows(files: GymFiles, envs: Iterable[Environment]) -> dict[str, dict]:
    """Each case's row as this Gym ships it, after the case's transforms, where it ships the pinned bytes (a row
    that drifted or is missing is the run's to report: the plan does without it)."""
    rows = {}
    for env in envs:
        if not env.has_case:
            continue
        case = load_case(env)
        row = shipped_row(case, files.read(case.file))
        if row is not None:
            rows[env.name] = row
    return rows


def plan(
    envs: Iterable[Environment],
    recordings: Iterable[Recording] = (),
    selections: Mapping[str, str] | None = None,
    rows: Mapping[str, dict] | None = None,
) -> list[PathSpec]:
    """Every path of these environments, in order: per environment, each kind's paths after those of the kinds
    declared before it. `selections`: which of its paths a kind plans, by kind name (`fault`: --faults, `variant`:
    --variants; a kind not named plans its default)."""
    by_env: dict[str, list[Recording]] = {}
    for recording in recordings:
        by_env.setdefault(recording.env, []).append(recording)
    given = Planning(by_env, dict(selections or {}), dict(rows or {}))
    paths: list[PathSpec] = []
    for env in envs:
        planned: list[PathSpec] = []
        for kind in kinds():
            planned += kind.plan(env, planned, given)
        paths += planned
    return paths


def ids(paths: Iterable[PathSpec]) -> list[str]:
    return [p.id for p in paths]


def plan_refs(
    envs: list[Environment],
    sources: Iterable[GymSource],
    selections: Mapping[str, str] | None = None,
    replay: bool = True,
) -> tuple[list[PathSpec], list[Recording]]:
    """The paths of these environments judged on these refs (each kind's selected ones), and the recordings they
    replay (`replay`: else none): the union of what each ref ships (the first ref's copy of a recording both ship),
    read from each ref's files without installing it, as each case's row is (from the first ref)."""
    sources = list(sources)
    found = [recordings_of(Distribution(s), envs, s.version or s.name) for s in sources] if replay else []
    recordings = union(*found)
    rows = case_rows(Distribution(sources[0]), envs) if sources else {}
    return plan(envs, recordings, selections, rows), recordings
