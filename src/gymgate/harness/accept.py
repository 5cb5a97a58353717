"""`gymgate accept` and `gymgate up`: which paths a command asked for, then one ref alone or a bump.

accept runs a ref through the acceptance matrix; unless it is the baseline itself, also the baseline, reruns of
what did not pass, and a comparison whose verdict decides the exit code. Each ref is served from the cache when
none of its inputs changed and its stored run is clean (`--no-cache`: never).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from gymgate import streams
from gymgate.cases.environments import needs_wide
from gymgate.compare.acks import Reviews
from gymgate.errors import DECLARED, EXIT_UNJUDGED, UsageError
from gymgate.harness.asked import Asked
from gymgate.harness.environments import judged_environments, with_derived
from gymgate.harness.run_options import RunOptions
from gymgate.pathid import PathId
from gymgate.refs import resolve_ref
from gymgate.refs.pins import baseline_pin


def read_paths(values: list[str], known: list[str]) -> set[str]:
    """`--paths` values: path ids, comma lists, or @file with one id per line (a retry.txt)."""
    wanted: set[str] = set()
    for value in values:
        if value.startswith("@"):
            try:
                items = Path(value[1:]).read_text().split()
            except OSError as exc:
                raise UsageError(f"cannot read {value[1:]}: {exc}") from exc
        else:
            items = value.split(",")
        wanted.update(i.strip() for i in items if i.strip())
    unknown = sorted(wanted - set(known))
    if unknown:
        raise UsageError(f"unknown path(s) {', '.join(unknown)}; paths look like {PathId.of('mcqa', 'accepted')}")
    return wanted


def planned(envs: list, sources: list, asked: Asked, run: RunOptions) -> tuple[list[str], RunOptions]:
    """The paths a judging command runs on every one of its refs (each kind's paths of each environment, with the
    union of the recordings the refs ship: gymgate.kinds.plan), narrowed by --paths (validated before anything is
    built), and the run options that carry the environments and the plan itself to every run."""
    from gymgate.kinds import planfile  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.kinds.plan import plan_refs  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    paths, _ = plan_refs(envs, [s for s in sources if s is not None], asked.selections(), replay=asked.replay)
    expected = [p.id for p in paths]
    if asked.paths:
        wanted = read_paths(asked.paths, expected)
        expected = [p for p in expected if p in wanted]
    kept = set(expected)
    plan = tuple(planfile.to_json(p) for p in paths if p.id in kept)
    return expected, replace(run, envs=[e.name for e in envs], plan=plan, wide=needs_wide(envs))


def require_judged_attempts(run: RunOptions) -> None:
    """A comparison judges nondeterminism: it needs at least two attempts of every path (one is only for a ref run
    alone, e.g. a benchmark)."""
    if run.attempts < 2:
        raise UsageError(f"--attempts {run.attempts}: a comparison needs at least 2 attempts per path")


def accept(
    gym_ref: str,
    gym_repo: str | None,
    baseline: str | None,
    no_baseline: bool,
    shard: str,
    reruns: int,
    acks: Reviews,
    verbose: bool,
    asked: Asked,
    run: RunOptions,
    load: bool = False,
    gym_tests: str = "none",
) -> tuple[int, dict]:
    """The exit code and the verdict document (what --json prints). `load`: also both refs under RL's load
    (harness/load.py), after the acceptance comparison; `gym_tests`: also each release's own tests against the
    other (harness/gym_tests.py)."""

    for asked_for, flag in ((load, "--load"), (gym_tests != "none", "--gym-tests")):
        if asked_for and no_baseline:
            raise UsageError(f"{flag} compares two refs: drop --no-baseline (--baseline REF names the other side)")
    envs, uncased = judged_environments(asked)
    candidate = resolve_ref(gym_ref, gym_repo)
    base_ref = None if no_baseline else (baseline or baseline_pin())
    base = resolve_ref(base_ref, gym_repo) if base_ref else None
    if gym_tests != "none" and base is not None and base.digest == candidate.digest:
        # The same Gym on both sides (a PR that leaves nemo-gym alone, with $GYMGATE_GYM_TESTS set): nothing to hold
        # either release's tests against.
        print("gym tests: the baseline is the candidate's Gym; nothing to run its tests against", flush=True)
        gym_tests = "none"
    envs = with_derived(asked, envs, uncased, [candidate, base])
    if shard:
        from gymgate.shards.split import Shard, shard_envs  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

        part = Shard.parse(shard)
        names = shard_envs([e.name for e in envs], part)
        print(f"shard {part.label}: {', '.join(names)} (of {len(envs)} environments)", flush=True)
        envs = [e for e in envs if e.name in names]
    expected, opts = planned(envs, [candidate, base], asked, run)
    if base is not None:
        require_judged_attempts(opts)
    from gymgate.ci.github import publish, run_annotations  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.harness.bump import judge_bump  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.harness.executor import run_ref  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.report.outputs import not_compared, read_summary  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.report.summary import print_summary, run_document, run_markdown  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.runfolder import RunFolder  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    narrowed = bool(asked.paths)
    if base is None or base.digest == candidate.digest:
        alone = run_ref(candidate, expected, opts, reuse=True, narrowed=narrowed)
        folder = RunFolder(alone.dir)
        print_summary(alone.judged, folder, streams.view())
        document = run_document(alone.judged, folder, cached=alone.cached)
        publish(run_markdown(document), run_annotations(list(folder.records(expected).values())))
        code = alone.code
    else:
        bump = judge_bump(base, candidate, expected, opts, reruns=reruns, narrowed=narrowed, acks=acks, verbose=verbose)
        if bump.why_not_compared:
            return bump.code, not_compared(bump.dir, bump.code, bump.why_not_compared)
        code, document = bump.code, read_summary(bump.dir)
    if gym_tests != "none":
        from gymgate.harness.gym_tests import judge_bump_tests, with_gym_tests  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

        code, document = with_gym_tests(
            code, document, judge_bump_tests(base, candidate, envs, gym_tests, opts, bump.dir, acks)
        )
    if not load:
        return code, document
    from gymgate.harness.load import judge_load, with_load  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    # The same ref on both sides is an A/A comparison: two instances of one Gym, what the noise alone does.
    return with_load(code, document, judge_load(base or candidate, candidate, opts.envs or [], opts, acks))


def up(gym_ref: str, gym_repo: str | None, asked: Asked, run: RunOptions) -> int:
    """Start every chosen environment's Gym services from the ref's environment, check them, stop them."""
    envs, uncased = judged_environments(asked)  # unknown names are a usage error before anything is built
    source = resolve_ref(gym_ref, gym_repo)
    envs = with_derived(asked, envs, uncased, [source])
    from gymgate.envs.child import run_in_env  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.harness.run import open_run, prepare, record_environment, service_args  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.runfolder import new_run_id  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    env = prepare(source, needs_wide(envs))
    opts, run_id = replace(run, envs=[e.name for e in envs]), new_run_id()
    folder = open_run(source, opts, run_id)
    record_environment(folder, env)
    child = ["-m", "gymgate.session.up", *service_args(folder, opts)]  # Gym is pointed at gymgate's own endpoint
    code = run_in_env(env, child, run_id).code
    if code not in DECLARED:  # the services run died without saying (a signal, a crash)
        print(f"gymgate: services run ended with status {code}", file=sys.stderr)
        return EXIT_UNJUDGED
    return code
