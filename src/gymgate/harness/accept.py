"""`gymgate accept` and `gymgate up`: which paths a command asked for, then one ref alone or a bump.

accept runs a ref through the acceptance matrix; unless it is the baseline itself, also the baseline, reruns of
what did not pass, and a comparison whose verdict decides the exit code. Each ref is served from the cache when
none of its inputs changed and its stored run is clean (`--no-cache`: never).
"""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

from gymgate import variants
from gymgate.errors import EXIT_ERROR, UsageError
from gymgate.faults import NONE
from gymgate.harness.executor import run_ref
from gymgate.harness.run import RunOptions, open_run, prepare, record_environment, service_args
from gymgate.pathid import PathId
from gymgate.refs import resolve_ref


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


def planned(envs: list, sources: list, args: Namespace) -> tuple[list[str], RunOptions]:
    """The paths a judging command runs on every one of its refs (each kind's paths of each environment, with the
    union of the recordings the refs ship: gymgate.kinds.plan), narrowed by --paths (validated before anything is
    built), and the run options that carry the plan itself to every run."""
    from dataclasses import replace

    from gymgate.kinds import planfile
    from gymgate.kinds.plan import selection

    replaying = [s for s in sources if s is not None] if getattr(args, "replay", True) else []
    selections = {"fault": getattr(args, "faults", NONE), "variant": getattr(args, "variants", variants.NONE)}
    paths, _ = selection(envs, replaying, selections)
    expected = [p.id for p in paths]
    if getattr(args, "paths", None):
        wanted = read_paths(args.paths, expected)
        expected = [p for p in expected if p in wanted]
    plan = tuple(planfile.to_json(p) for p in paths if p.id in set(expected))
    wide = any(not e.has_case for e in envs)  # their servers' requirements: the ref's wide environment
    return expected, replace(RunOptions.of(args), plan=plan, wide=wide)


def require_judged_attempts(args: Namespace) -> None:
    """A comparison judges nondeterminism: it needs at least two attempts of every path (one is only for a ref run
    alone, e.g. a benchmark)."""
    if args.attempts < 2:
        raise UsageError(f"--attempts {args.attempts}: a comparison needs at least 2 attempts per path")


def accept(args: Namespace) -> tuple[int, dict]:
    """The exit code and the verdict document (what --json prints)."""
    from gymgate.ci.github import publish, run_annotations
    from gymgate.harness.bump import judge_bump
    from gymgate.harness.environments import judged_environments, with_derived
    from gymgate.refs.pins import baseline_pin
    from gymgate.report.outputs import not_compared, read_summary
    from gymgate.report.summary import run_document, run_markdown
    from gymgate.runfolder import RunFolder

    envs = judged_environments(args)
    candidate = resolve_ref(args.gym_ref, args.gym_repo)
    base_ref = None if args.no_baseline else (args.baseline or baseline_pin())
    baseline = resolve_ref(base_ref, args.gym_repo) if base_ref else None
    envs = with_derived(args, envs, [candidate, baseline])
    if args.shard:
        from gymgate.shards.plan import Shard, shard_envs

        shard = Shard.parse(args.shard)
        args.envs = shard_envs([e.name for e in envs], shard)
        print(f"shard {shard.label}: {', '.join(args.envs)} (of {len(envs)} environments)", flush=True)
        envs = [e for e in envs if e.name in args.envs]
    expected, opts = planned(envs, [candidate, baseline], args)
    if baseline is not None:
        require_judged_attempts(args)
    if baseline is None or baseline.digest == candidate.digest:
        alone = run_ref(candidate, expected, opts, reuse=True, narrowed=bool(args.paths))
        run = RunFolder(alone.dir)
        document = run_document(alone.judged, run, cached=alone.cached)
        publish(run_markdown(document), run_annotations(list(run.records(expected).values())))
        return alone.code, document
    bump = judge_bump(
        baseline,
        candidate,
        expected,
        opts,
        reruns=args.reruns,
        narrowed=bool(args.paths),
        acks=args.acks,
        verbose=args.verbose,
    )
    if bump.why_not_compared:
        return bump.code, not_compared(bump.dir, bump.code, bump.why_not_compared)
    return bump.code, read_summary(bump.dir)


def up(args: Namespace) -> int:
    """Start every chosen environment's Gym services from the ref's environment, check them, stop them."""
    from gymgate.envs.child import run_in_env
    from gymgate.harness.environments import judged_environments, with_derived
    from gymgate.runfolder import new_run_id

    envs = judged_environments(args)  # unknown names are a usage error before anything is built
    source = resolve_ref(args.gym_ref, args.gym_repo)
    envs = with_derived(args, envs, [source])
    env = prepare(source, any(not e.has_case for e in envs))
    opts, run_id = RunOptions.of(args), new_run_id()
    run = open_run(source, opts, run_id)
    record_environment(run, env)
    child = ["-m", "gymgate.session.up", *service_args(run, opts)]  # Gym is pointed at gymgate's own endpoint
    code = run_in_env(env, child, run_id).code
    if code not in (0, 1, 2):
        print(f"gymgate: services run ended with status {code}", file=sys.stderr)
        return EXIT_ERROR
    return code
