"""Which environments a judging command runs: the cases it names (a drafted one refuses the run), and — once its
refs are resolved — environments without a case derived from the refs' own configs (cases/derived.py): every one
that can run here for `--env-set all`, or a resources server named with `--env` that no case covers."""

from __future__ import annotations

from argparse import Namespace

from gymgate.cases.derived import NotRunnable, derive_usable, runnable_here
from gymgate.cases.environments import ALL_SET, Environment, all_environments, refuse_drafts
from gymgate.cases.named import load_environments
from gymgate.errors import UsageError

UNCASED = "_uncased"  # the --env names no case has: derived from the refs (with_derived)


def judged_environments(args: Namespace) -> list[Environment]:
    """The cases a judging command was asked for; the names no case has are kept for `with_derived`."""
    known = {e.name for e in all_environments()}
    asked = args.envs
    setattr(args, UNCASED, [n for n in asked or [] if n not in known])
    envs = load_environments([n for n in asked if n in known] if asked is not None else None)
    refuse_drafts(envs)  # before anything is built
    return envs


def with_derived(args: Namespace, envs: list[Environment], sources: list) -> list[Environment]:
    """`envs` and the environments without a case the command asked for, derived from the (resolved) refs: for
    `--env-set all` every one that runs here on any ref; for `--env NAME` that server (an unknown name is a usage
    error)."""
    sources = [s for s in sources if s is not None]
    if getattr(args, "env_set", None) == ALL_SET:
        envs = envs + every_runnable(sources, {e.name for e in envs})
    elif getattr(args, UNCASED, None):
        envs = envs + [_one(name, sources) for name in getattr(args, UNCASED)]
    args.envs = [e.name for e in envs]
    return envs


def _one(name: str, sources: list) -> Environment:
    from gymgate.refs.distribution import Distribution

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
    from gymgate.envs.project import wide_extras
    from gymgate.refs.distribution import Distribution

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
