"""The paths of a selection: each environment's hand-written case (accepted, rejected), then each recording of its
server the Gyms being judged ship, replayed. A bump replays the union of both refs' recordings (by content) on
both refs, so the harness reads them from each ref's files and hands the session the list (run folder
`replays.jsonl`); a session started by hand reads its own Gym's."""

from __future__ import annotations

from collections.abc import Iterable

from gymgate.cases.case import load_case
from gymgate.cases.environments import Environment
from gymgate.faults import NONE
from gymgate.paths.faulted import fault_paths
from gymgate.paths.handwritten import case_paths
from gymgate.paths.replayed import replay_path
from gymgate.paths.spec import PathSpec
from gymgate.paths.variant import variant_paths
from gymgate.recordings.read import GymFiles, Recording, data_dir, read_recordings
from gymgate.refs.source import GymSource


def recordings_of(files: GymFiles, envs: Iterable[Environment], gym: str) -> list[Recording]:
    """Every recording the Gym ships for these environments' servers."""
    found: list[Recording] = []
    for env in envs:
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


def plan(
    envs: Iterable[Environment], recordings: Iterable[Recording] = (), faults: str = NONE, variants: str = NONE
) -> list[PathSpec]:
    """Every path of these environments, in order: per environment its case's paths, its fault paths (`faults`:
    which, gymgate.faults.spec.SELECTIONS), its replays by key, then the variants of its case's and replays'
    answers (`variants`: which forms, gymgate.variants.SELECTIONS), each after its original."""
    by_env: dict[str, list[Recording]] = {}
    for recording in recordings:
        by_env.setdefault(recording.env, []).append(recording)
    paths: list[PathSpec] = []
    for env in envs:
        case = case_paths(env)
        replays = [replay_path(env, r) for r in sorted(by_env.get(env.name, []), key=lambda r: r.key)]
        paths += case + fault_paths(case, faults) + replays + variant_paths(case + replays, variants)
    return paths


def ids(paths: Iterable[PathSpec]) -> list[str]:
    return [p.id for p in paths]


def selection(
    envs: list[Environment], sources: Iterable[GymSource], faults: str = NONE, variants: str = NONE
) -> tuple[list[str], list[Recording]]:
    """The path ids of these environments judged on these refs (with the fault paths `faults` and the variants
    `variants` select), and the recordings they replay: the union of what each ref ships (the first ref's copy of a
    recording both ship), read from each ref's files without installing it."""
    from gymgate.refs.distribution import Distribution

    found = [recordings_of(Distribution(source), envs, source.version or source.name) for source in sources]
    recordings = union(*found)
    return ids(plan(envs, recordings, faults, variants)), recordings
