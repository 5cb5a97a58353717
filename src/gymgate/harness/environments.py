"""Which environments a judging command runs: the cases it names (a drafted one refuses the run), and — once its
refs are resolved — environments without a case derived from the refs' own configs (cases/derived.py): every one
that can run here for `--env-set all`, or a resources server named with `--env` that no case covers."""

from __future__ import annotations

from gymgate.cases.derived import NotRunnable, derive_usable, runnable_here
from gymgate.cases.environments import ALL_SET, Environment, all_environments, refuse_drafts
from gymgate.cases.named import load_environments
from gymgate.envs.project import wide_extras
from gymgate.errors import UsageError
from gymgate.harness.asked import Asked
from gymgate.refs.distribution import Distribution


def judged_environments(asked: Asked) -> tuple[list[Environment], list[str]]:
    """The cases a judging command was asked for, and the names it asked for that no case has (`with_derived`
    derives them once the refs are resolved)."""
    known = {e.name for e in all_environments()}
    names = asked.envs
    uncased = [n for n in names or [] if n not in known]
    envs = load_environments([n for n in names if n in known] if names is not None else None)
    refuse_drafts(envs)  # before anything is built
    return envs, uncased


def with_derived(asked: Asked, envs: list[Environment], uncased: list[str], sources: list) -> list[Environment]:
    """`envs` and the environments without a case the command asked for, derived from the (resolved) refs: for
    `--env-set all` every one that runs here on any ref; for `--env NAME` that server (an unknown name is a usage
    error)."""
    sources = [s for s in sources if s is not None]
    if asked.env_set == ALL_SET:
        return envs + every_runnable(sources, {e.name for e in envs})
    return envs + [_one(name, sources) for name in uncased]


def _one(name: str, sources: list) -> Environment:
    problems = []
    for source in sources:
        try:
            return derive_usable(Distribution(source), name)
        except UsageError as exc:
            problems.append(f"{source.name}: {exc}")
    known = ", ".join(sorted(e.name for e in all_environments()))
    raise UsageError(
        f"unknown environment {name!r}: no case in cases/ ({known}) and no ref declares it "
        f"({'; '.join(problems)}); `gymgate cases list --gym-ref REF` lists a Gym's environments"
    )


def every_runnable(sources: list, covered: set[str]) -> list[Environment]:
    """The environments without a case that can run here on any of these refs (the first ref's derivation of one
    several have), announcing per ref which cannot run and why."""

    chosen: dict[str, Environment] = {}
    for source in sources:
        dist = Distribution(source)
        derived, others = runnable_here(dist, covered)
        left_out = wide_extras(dist, derived)[1]
        others += [NotRunnable(name, f"left out of the shared environment: {why}") for name, why in left_out.items()]
        kept = [e for e in derived if e.name not in left_out]
        print(
            f"gym ref {source.name!r}: {len(kept)} environments without a case run from Gym's own configs; "
            f"{len(others)} cannot run here:",
            flush=True,
        )
        for item in sorted(others, key=lambda o: o.name):
            print(f"  {item.name}: {item.why}", flush=True)
        for env in kept:
            chosen.setdefault(env.name, env)
    return sorted(chosen.values(), key=lambda e: e.name)
