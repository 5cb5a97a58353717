"""The gymgate command line: resolve refs, build environments, start and check Gym services."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from gymgate.acceptance.limits import ATTEMPTS, MAX_ATTEMPTS
from gymgate.ci import settings
from gymgate.errors import EXIT_ERROR, EXIT_FAILED, EXIT_OK, GymgateError, UsageError
from gymgate.harness.run import RunOptions, run_ref, open_run, prepare, record_environment, service_args
from gymgate.refs import resolve_ref
from gymgate.refs.pins import known_pins
from gymgate.runfolder import RunFolder

EXIT_FILE = "GYMGATE_EXIT_FILE"  # where the exit code is also written (nox sessions read it)


def _add_ref_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gym-ref", required=True, help="pin name, index version, local path or git SHA")
    parser.add_argument(
        "--gym-repo",
        help="git URL or path the SHA is resolved in (default: $GYMGATE_GYM_REPO or the upstream repository)",
    )
    _add_cache_arg(parser)


def _add_cache_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", type=Path, help=settings.help_text(settings.CACHE, settings.CACHE.meaning))


def _add_json_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the verdict as JSON on stdout (results.json's summary), everything else on stderr",
    )


def _workers(value: str) -> str:
    if value == "auto" or (value.isdigit() and int(value) <= 64):
        return value
    raise argparse.ArgumentTypeError(f"expected 'auto' or a number of workers (0-64), got {value!r}")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if 0 < seconds <= 86400:
        return seconds
    raise argparse.ArgumentTypeError(f"expected a number of seconds (0-86400], got {value!r}")


def _attempts(value: str) -> int:
    if value.isdigit() and int(value) <= 10:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of reruns (0-10), got {value!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gymgate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("resolve", help="resolve a Gym ref and print it as JSON")
    _add_ref_args(p)

    p = sub.add_parser(
        "gym-ref-of",
        help="print the Gym ref a uv.lock pins (a version, or a git commit): what a CI job on a bump judges",
    )
    p.add_argument("lock", type=Path, metavar="UV_LOCK")

    p = sub.add_parser("cases", help="the Gym environments of a ref and gymgate's cases for them")
    cases = p.add_subparsers(dest="cases_command", required=True)
    p = cases.add_parser(
        "list",
        help="which environments of a Gym have example data, which have a case, which cannot run here and why",
    )
    _add_ref_args(p)
    p.add_argument("--json", action="store_true", dest="list_json", help="print the list as JSON")

    p = sub.add_parser("case", help="draft a case for a Gym environment")
    case = p.add_subparsers(dest="case_command", required=True)
    p = case.add_parser(
        "new",
        help="draft cases/NAME.toml for a Gym environment, run both paths on the ref, write what they observed",
        description="Finds the environment's config and servers, pins an example row by SHA256, drafts the accepted "
        "and rejected model scripts from the row's own answer or expected action, runs both paths on the real Gym "
        "and writes the observed reward and verifier fields as the expected values. The case stays marked [draft] "
        "(never judged) until a person reviews it. Exit 0 when accepted earned the top reward and rejected less, "
        "1 when they did not separate (the draft says which), 2 usage or infrastructure error.",
    )
    p.add_argument("name", help="the case's name (cases/NAME.toml); also the resources server folder by default")
    _add_ref_args(p)
    p.add_argument("--server", help="the resources server folder (resources_servers/SERVER), if not NAME")
    p.add_argument("--config", help="the config file to use, if the server has several (path inside the Gym)")
    p.add_argument("--row", type=int, default=0, metavar="N", help="the example row to pin (default: the first)")
    p.add_argument("--force", action="store_true", help="replace an existing draft of that name")
    p.add_argument(
        "--keep-scripts",
        action="store_true",
        help="rerun an existing draft with the scripts a person finished in it (turns, judge, judge_markers)",
    )
    p.add_argument("--runs-dir", type=Path, help=settings.help_text(settings.RUNS, settings.RUNS.meaning))

    p = sub.add_parser("python", help="the interpreters gymgate can use, and CPython built into its cache")
    python = p.add_subparsers(dest="python_command", required=True)
    python.add_parser("list", help="every CPython found (PATH, pyenv, gymgate's builds, uv's), with its build")
    p = python.add_parser("build", help="build a CPython release from its source tarball into gymgate's cache, once")
    p.add_argument("version", help="a release declared in src/gymgate/envs/cpython.toml, e.g. 3.13.15")
    p.add_argument("--source", type=Path, help="the source tarball (default: fetched from Debian's archive)")
    p.add_argument("--sha256", help="the tarball's digest, when it is not the one cpython.toml declares")
    p = python.add_parser("ensure", help="an interpreter meeting a requirement: found, else built (what tests need)")
    p.add_argument("requires_python", metavar="SPEC", help="e.g. '>=3.13.14'")

    p = sub.add_parser("env", help="build (or reuse) the locked environment of a Gym ref")
    _add_ref_args(p)

    p = sub.add_parser("lock", help="regenerate envs/<pin>/pyproject.toml and uv.lock")
    p.add_argument("pins", nargs="*", help="pins to relock (default: all)")
    p.add_argument("--upgrade", action="store_true", help="let uv pick newer versions within exclude-newer")

    for name, text in (
        ("up", "start every acceptance environment's Gym services, check them, stop them"),
        ("accept", "run a Gym ref through the acceptance matrix"),
    ):
        p = sub.add_parser(name, help=text)
        _add_ref_args(p)
        _add_env_args(p)
        p.add_argument("--runs-dir", type=Path, help=settings.help_text(settings.RUNS, settings.RUNS.meaning))
        p.add_argument("--spinup-timeout", type=_seconds, default=600.0, help="seconds one Gym may take to start")
        p.add_argument(
            "--stop-timeout",
            type=_seconds,
            default=60.0,
            help="seconds one Gym may take to stop gracefully; past it the Gym is killed and the lifecycle check "
            "fails (default: 60)",
        )
    p.add_argument(
        "--path-timeout",
        type=_seconds,
        default=180.0,
        help="seconds one rollout may take; past it the path is an ERROR (gym, timeout) and its Gym is torn down "
        "(default: 180). A bump's candidate runs each path under its own deadline, 10x what the baseline measured "
        "for it (at least 30 s), capped by this",
    )
    _add_attempts_arg(p)
    p.add_argument("--selftest", action="store_true", help="also run gymgate's own negative tests on the real paths")
    p.add_argument(
        "--baseline",
        metavar="REF",
        default=settings.from_env(settings.BASELINE, str, None),
        help=settings.help_text(settings.BASELINE, "compare against this ref (default: the baseline pin)"),
    )
    p.add_argument("--no-baseline", action="store_true", help="run the ref alone, without a comparison")
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N of the environments (balanced by shards/costs.toml); `gymgate merge` combines "
        "the shard runs of each ref into one",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="run every ref afresh, even when a stored clean run has exactly the same inputs (default: serve it)",
    )
    p.add_argument(
        "--reruns",
        type=_attempts,
        default=settings.from_env(settings.RERUNS, _attempts, 2),
        metavar="N",
        help="attempts added, in fresh Gym instances, for each path that does not pass on the candidate, on both "
        "refs; mixed outcomes are flaky (default: 2; 0 disables; or $GYMGATE_RERUNS)",
    )
    p.add_argument(
        "--paths",
        action="append",
        metavar="ENV:MODE|@FILE",
        help="only these paths (repeatable; @retry.txt reads one per line)",
    )
    _add_workers_arg(p)
    _add_acks_arg(p)
    _add_json_arg(p)
    p = sub.add_parser(
        "matrix",
        help="run many refs in order (default: every pin) and judge the bump between each pair of neighbours",
        description="Each ref runs once, or is served from the cache when none of its inputs changed. Writes "
        "matrix.md and matrix.html (a refs x paths table, then every neighbouring bump) and each bump's full report. "
        "Exit: the last bump's verdict (0 clean, 1 regression or unreviewed contract change, 2 cannot judge).",
    )
    p.add_argument("refs", nargs="*", metavar="REF", help="Gym refs in order, oldest first (default: every pin)")
    p.add_argument("--gym-repo", help="git URL or path SHAs, tags and branches are resolved in")
    _add_cache_arg(p)
    _add_many_ref_args(p, "matrix.md, matrix.html and bumps/", "matrix")
    p.add_argument(
        "--only",
        metavar="REF",
        help="run just this ref of the matrix (nox's per-pin sessions): alone when no REFs are listed, not at all "
        "when REFs are listed without it",
    )
    _add_acks_arg(p)
    p = sub.add_parser(
        "bisect",
        help="find the first commit between a good and a bad ref at which paths regress",
        description="Walks first-parent history between --good and --bad, running only the chosen paths (default: "
        "those that regress from good to bad) and their environments. Commits that cannot be built or started are "
        "skipped; unsure ones are rerun in fresh Gyms. Writes bisect.md, bisect.json and the comparison of the last "
        "good and the first bad commit. Exit: 1 a first bad commit (or its suspects) was found, 0 nothing regresses, "
        "2 usage or infrastructure error.",
    )
    p.add_argument("--good", required=True, metavar="REF", help="a commit, tag or branch where the paths pass")
    p.add_argument("--bad", required=True, metavar="REF", help="a later commit, tag or branch where they regress")
    p.add_argument("--gym-repo", help="the git URL or path both refs are in (default: $GYMGATE_GYM_REPO or upstream)")
    p.add_argument("--paths", action="append", metavar="ENV:MODE|@FILE", help="bisect only these paths")
    _add_cache_arg(p)
    _add_many_ref_args(p, "bisect.md, bisect.json and the report", "bisect")
    _add_acks_arg(p)
    p = sub.add_parser(
        "merge",
        help="combine shard runs (accept --shard K/N) of each ref into one run; with two refs, compare them",
        description="Groups the runs by ref; each group must be every shard of one split, with the same inputs, "
        "finished, not overlapping. Writes one merged run per ref (like an unsharded run: it compares, reports and is "
        "served from the cache the same way). Given the shards of a baseline and a candidate, compares the merged "
        "runs and exits with the verdict (0 clean, 1 regression, 2 cannot judge); one ref: its own verdict.",
    )
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="shard run folders (of one or two refs)")
    p.add_argument("--runs-dir", type=Path, help=settings.help_text(settings.RUNS, settings.RUNS.meaning))
    _add_acks_arg(p)
    _add_json_arg(p)
    p = sub.add_parser(
        "shard-costs", help="measure each environment's cost from stored runs (what accept --shard balances by)"
    )
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="finished runs (the median is kept)")
    p.add_argument("--write", action="store_true", help="write shards/costs.toml (default: print it)")
    p = sub.add_parser("compare", help="compare two stored runs (nothing is run)")
    p.add_argument("baseline", type=Path, help="the baseline run folder")
    p.add_argument("candidate", type=Path, help="the candidate run folder")
    p.add_argument(
        "--out",
        type=Path,
        help="folder for report.md, report.html, results.json, junit.xml, retry.txt (default: the candidate run)",
    )
    _add_acks_arg(p)
    _add_json_arg(p)
    p = sub.add_parser(
        "ack",
        help="draft acknowledgements of a comparison's contract changes (acks/<baseline>-to-<candidate>.toml)",
        description="Writes every unacknowledged contract change of the comparison into the ack file of its ref "
        "pair, with an empty reason. Fill in each reason and commit the file; an entry without one covers nothing.",
    )
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="a compared candidate run, or BASELINE CANDIDATE")
    _add_acks_arg(p)
    return parser


def _add_many_ref_args(p: argparse.ArgumentParser, writes: str, kind: str) -> None:
    """The options of commands that run many refs (matrix, bisect)."""
    _add_env_args(p)
    p.add_argument("--runs-dir", type=Path, help=settings.help_text(settings.RUNS, settings.RUNS.meaning))
    p.add_argument("--out", type=Path, help=f"folder for {writes} (default: runs/{kind}-<stamp>)")
    p.add_argument("--spinup-timeout", type=_seconds, default=600.0, help="seconds one Gym may take to start")
    p.add_argument("--stop-timeout", type=_seconds, default=60.0, help="seconds one Gym may take to stop gracefully")
    p.add_argument("--path-timeout", type=_seconds, default=180.0, help="seconds one rollout may take")
    _add_attempts_arg(p)
    _add_workers_arg(p)
    p.add_argument("--no-cache", action="store_true", help="run every ref afresh (default: serve unchanged clean runs)")


def _in_session_attempts(value: str) -> int:
    if value.isdigit() and 1 <= int(value) <= MAX_ATTEMPTS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of attempts (1-{MAX_ATTEMPTS}), got {value!r}")


def _judged_attempts(args) -> None:
    """A comparison judges nondeterminism: it needs at least two attempts of every path (one is only for a ref run
    alone, e.g. a benchmark)."""
    if getattr(args, "attempts", ATTEMPTS) < 2:
        raise UsageError(f"--attempts {args.attempts}: a comparison needs at least 2 attempts per path")


def _add_attempts_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--attempts",
        type=_in_session_attempts,
        default=settings.from_env(settings.ATTEMPTS, _in_session_attempts, ATTEMPTS),
        metavar="N",
        help=settings.help_text(
            settings.ATTEMPTS,
            f"attempts of every path in the same Gym, diffed with each other: a ref that does not do the same thing "
            f"twice is nondeterministic (default: {ATTEMPTS}; 1 only for a ref run alone, --no-baseline)",
        ),
    )


def _add_env_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        action="append",
        dest="envs",
        metavar="NAME",
        help=settings.help_text(settings.ENVS, "this environment (repeatable; any case)"),
    )
    parser.add_argument(
        "--env-set", metavar="SET", help="a named set of environments from cases/sets.toml (default: `default`)"
    )


def _env_names(raw: str) -> list[str]:
    names = [n for n in raw.replace(",", " ").split() if n]
    if not names:
        raise ValueError("no environment named")
    return names


def _add_workers_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--workers",
        default=settings.from_env(settings.WORKERS, _workers, "auto"),
        type=_workers,
        help="pytest-xdist workers: auto (one per core), N, or 0 for none (default: auto; or $GYMGATE_WORKERS)",
    )


def _add_acks_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--acks", type=Path, metavar="DIR", help="reviewed acknowledgements (default: acks/ in the gymgate checkout)"
    )


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    exit_file = os.environ.get(EXIT_FILE)  # how `nox -s …` learns the exit code through nox's own runner
    if exit_file:
        Path(exit_file).write_text(str(code))
    return code


def _main(argv: list[str] | None) -> int:
    from gymgate.envs.child import terminate_as_interrupt

    try:
        parser = build_parser()  # reads the GYMGATE_* defaults: one that cannot be read is a usage error
    except UsageError as exc:
        print(f"gymgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(argv)
    if getattr(args, "cache_dir", None) is not None:  # the flag wins, for this process and every child
        os.environ[settings.CACHE.var] = str(args.cache_dir.resolve())
    args.json_out = _verdict_stream() if getattr(args, "json", False) else None
    if hasattr(args, "env_set"):
        from gymgate.cases.environments import selection

        try:
            if args.envs is None and args.env_set is None:  # a flag wins over the variable
                args.envs = settings.from_env(settings.ENVS, _env_names, None)
            args.envs = selection(args.envs, args.env_set)
        except UsageError as exc:
            print(f"gymgate: error: {exc}", file=sys.stderr)
            return exc.exit_code
    terminate_as_interrupt()
    try:
        return COMMANDS[args.command](args)
    except GymgateError as exc:
        print(f"gymgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gymgate: interrupted; every process the run started has been stopped", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # the reader went away (`… | head`): not a crash, and no verdict either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as exc:  # gymgate's own crash: never a verdict (exit 1 means "regression")
        from gymgate.runfolder import write_crash

        where = write_crash(exc)
        print(f"gymgate: internal error: {type(exc).__name__}: {exc} (trace: {where})", file=sys.stderr)
        return EXIT_ERROR


def _verdict_stream():
    """stdout for the JSON verdict alone: everything else this process and its children print goes to stderr."""
    sys.stdout.flush()
    verdict = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return verdict


def _print_json(args, document: dict) -> None:
    if args.json_out is not None:
        args.json_out.write(json.dumps(document, indent=2) + "\n")
        args.json_out.flush()


def cmd_resolve(args) -> int:
    print(json.dumps(resolve_ref(args.gym_ref, args.gym_repo).to_json(), indent=2))
    return EXIT_OK


def _options(args) -> RunOptions:
    return RunOptions(
        envs=args.envs,
        runs_dir=args.runs_dir,
        spinup_timeout=args.spinup_timeout,
        workers=getattr(args, "workers", "auto"),
        selftest=getattr(args, "selftest", False),
        path_timeout=getattr(args, "path_timeout", 180.0),
        stop_timeout=args.stop_timeout,
        cache=not getattr(args, "no_cache", False),
        shard=getattr(args, "shard", None) or "",
        attempts=getattr(args, "attempts", ATTEMPTS),
    )


def cmd_gym_ref_of(args) -> int:
    from gymgate.refs.lockref import gym_ref_of_lock

    try:
        text = args.lock.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {args.lock}: {exc}") from None
    print(gym_ref_of_lock(text, str(args.lock)))
    return EXIT_OK


def cmd_cases(args) -> int:
    from gymgate.cases.catalog import catalog
    from gymgate.envs.distribution import Distribution

    source = resolve_ref(args.gym_ref, args.gym_repo)
    found = catalog(Distribution(source))
    if args.list_json:
        print(json.dumps({"gym": source.to_json(), "environments": [e.to_json() for e in found]}, indent=2))
        return EXIT_OK
    with_data = [e for e in found if e.examples]
    covered = [e for e in found if e.cases]
    runnable = [e for e in found if e.runnable and not e.cases]
    print(
        f"Gym {source.name} ({source.describe()}): {len(found)} environments, {len(with_data)} with example data, "
        f"{len(covered)} with a case, {len(runnable)} more with nothing declared against running here"
    )
    width = max(len(e.name) for e in found) if found else 10
    print(f"{'environment':<{width}}  {'rows':>4}  {'case':<24}  runs here")
    for item in found:
        rows = sum(item.examples.values())
        here = "yes: nothing declared against it" if item.runnable else "no: " + "; ".join(item.blockers)
        notes = f" ({'; '.join(item.notes)})" if item.notes and item.runnable else ""
        print(f"{item.name:<{width}}  {rows or '—':>4}  {', '.join(item.cases) or '—':<24}  {here}{notes}")
    return EXIT_OK


def cmd_case(args) -> int:
    from gymgate.cases.draft import (
        add_closing_turn,
        draft_case,
        keep_scripts,
        observed_expect,
        observed_metadata,
        observed_tool_outputs,
        render,
        separation,
        wants_another_turn,
    )
    from gymgate.cases.environments import all_environments, cases_dir
    from gymgate.envs.distribution import Distribution

    target = cases_dir() / f"{args.name}.toml"
    taken = [e for e in all_environments() if e.name == args.name and e.case_file != target]
    replaceable = (args.force or args.keep_scripts) and target.exists() and "[draft]" in target.read_text()
    if taken or (target.exists() and not replaceable):
        where = taken[0].case_file if taken else target
        raise UsageError(f"a case named {args.name} exists ({where}); pick another name (or --force for a draft)")
    source = resolve_ref(args.gym_ref, args.gym_repo)
    draft = draft_case(Distribution(source), args.name, args.server or args.name, args.row, args.config)
    if args.keep_scripts:
        if not target.is_file():
            raise UsageError(f"--keep-scripts: {target} does not exist; draft it first")
        keep_scripts(draft, target.read_text())
    target.write_text(render(draft, {}, "drafted; its paths have not run yet"))
    print(f"drafted {target} from {draft.config.path}, row {draft.line} of {draft.row_file}", flush=True)
    paths = [f"{args.name}:{mode}" for mode in ("accepted", "rejected")]
    opts = RunOptions(envs=[args.name], runs_dir=args.runs_dir, cache=False, workers="1")
    while True:
        ran = run_ref(source, paths, opts)
        records = {r.mode: r for r in RunFolder(ran.dir).records(paths).values()}
        if ran.code == EXIT_ERROR:  # the session itself did not finish: nothing was learnt about the scripts
            print(f"gymgate: error: the draft's paths could not run; see {ran.dir}; {target} is left as drafted")
            return EXIT_ERROR
        if not (wants_another_turn(records) and add_closing_turn(draft)):
            break
        print("the agent asked the model again after the scripted turns: one more turn, and again", flush=True)
        target.write_text(render(draft, {}, "drafted; its paths have not run yet"))
    problems = draft.problems + separation(records)
    # What the paths earned becomes the expectation only when the two modes tell right from wrong.
    expects = {} if problems else {mode: observed_expect(r, draft.row) for mode, r in records.items()}
    why = f"drafted by gymgate case new from {source.name} (run {ran.dir.name}); "
    why += ("it did not separate: " + "; ".join(problems)) if problems else "review the scripts and expected values"
    metadata = observed_metadata(records["accepted"], draft.row, draft.config.server_key) if not problems else None
    tools = {mode: observed_tool_outputs(r) for mode, r in records.items()} if not problems else None
    target.write_text(render(draft, expects, why, metadata, tools))
    print(f"\nwrote {target} (marked [draft]: accept refuses it until a person removes the mark)")
    for problem in problems:
        print(f"  to finish: {problem}")
    return EXIT_FAILED if problems else EXIT_OK


def cmd_python(args) -> int:
    from gymgate.envs import cpython, cpython_source
    from gymgate.envs.python import discover

    if args.python_command == "list":
        for interp in discover():
            print(f"{interp.version:<10} {interp.path}  {interp.build.splitlines()[0] if interp.build else ''}")
        return EXIT_OK
    if args.python_command == "build":
        spec = cpython.release(args.version)
        tarball = args.source.resolve() if args.source else cpython_source.fetch(spec)
        print(cpython.build(spec.version, tarball, sha256=args.sha256))
        return EXIT_OK
    print(cpython.provide(args.requires_python, log=lambda line: print(line, file=sys.stderr)))
    return EXIT_OK


def cmd_env(args) -> int:
    prepare(resolve_ref(args.gym_ref, args.gym_repo))
    return EXIT_OK


def cmd_lock(args) -> int:
    from gymgate.envs.prepare import relock
    from gymgate.refs.pins import load_pin

    names = args.pins or known_pins()
    for name in names:
        source = load_pin(name)
        if source is None:
            raise UsageError(f"no pin named {name!r}; known pins: {', '.join(known_pins())}")
        relock(source, upgrade=args.upgrade)
        print(f"locked envs/{name}/uv.lock for {source.describe()}")
    return EXIT_OK


def cmd_up(args) -> int:
    from gymgate.cases.environments import load_environments
    from gymgate.envs.child import run_in_env
    from gymgate.runfolder import new_run_id

    load_environments(args.envs)  # unknown names are a usage error before anything is built
    source = resolve_ref(args.gym_ref, args.gym_repo)
    env = prepare(source)
    opts, run_id = _options(args), new_run_id()
    run = open_run(source, opts, run_id)
    record_environment(run, env)
    child = ["-m", "gymgate.session.up", *service_args(run, opts)]  # Gym is pointed at gymgate's own endpoint
    code = run_in_env(env, child, run_id).code
    if code not in (0, 1, 2):
        print(f"gymgate: services run ended with status {code}", file=sys.stderr)
        return EXIT_ERROR
    return code


def _path_ids(envs) -> list[str]:
    """Both paths of each environment, in order."""
    return [f"{e.name}:{mode}" for e in envs for mode in ("accepted", "rejected")]


def _read_paths(values: list[str], known: list[str]) -> set[str]:
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
        raise UsageError(f"unknown path(s) {', '.join(unknown)}; paths look like mcqa:accepted")
    return wanted


def cmd_accept(args) -> int:
    """One ref through the matrix; unless it is the baseline itself, also the baseline, reruns of what did not pass,
    and a comparison whose verdict decides the exit code. Each ref is served from the cache when none of its inputs
    changed and its stored run is clean (`--no-cache`: never)."""
    from gymgate.cases.environments import load_environments, refuse_drafts
    from gymgate.ci.github import publish, run_annotations
    from gymgate.harness.bump import judge_bump
    from gymgate.refs.pins import baseline_pin
    from gymgate.report.outputs import not_compared, read_summary
    from gymgate.report.summary import run_document, run_markdown
    from gymgate.runfolder import RunFolder

    envs = load_environments(args.envs)
    refuse_drafts(envs)  # before anything is built
    if args.shard:
        from gymgate.shards.plan import Shard, shard_envs

        shard = Shard.parse(args.shard)
        args.envs = shard_envs([e.name for e in envs], shard)
        print(f"shard {shard.label}: {', '.join(args.envs)} (of {len(envs)} environments)", flush=True)
        envs = [e for e in envs if e.name in args.envs]
    expected = _path_ids(envs)
    if args.paths:  # validated before anything is built
        wanted = _read_paths(args.paths, expected)
        expected = [p for p in expected if p in wanted]
    candidate = resolve_ref(args.gym_ref, args.gym_repo)
    base_ref = None if args.no_baseline else (args.baseline or baseline_pin())
    baseline = resolve_ref(base_ref, args.gym_repo) if base_ref else None
    opts = _options(args)
    if baseline is not None:
        _judged_attempts(args)
    if baseline is None or baseline.digest == candidate.digest:
        alone = run_ref(candidate, expected, opts, reuse=True, narrowed=bool(args.paths))
        run = RunFolder(alone.dir)
        document = run_document(run, alone.code, expected, cached=alone.cached)
        publish(run_markdown(document), run_annotations(list(run.records(expected).values())))
        _print_json(args, document)
        return alone.code
    bump = judge_bump(
        baseline, candidate, expected, opts, reruns=args.reruns, narrowed=bool(args.paths), acks=args.acks
    )
    compared = not bump.why_not_compared
    _print_json(args, read_summary(bump.dir) if compared else not_compared(bump.dir, bump.code, bump.why_not_compared))
    return bump.code


def cmd_matrix(args) -> int:
    from gymgate.cases.environments import load_environments, refuse_drafts

    _judged_attempts(args)
    from gymgate.harness.matrix import print_matrix, report_dir, run_matrix
    from gymgate.refs.pins import pins_in_order
    from gymgate.report.matrix import write_matrix_reports

    envs = load_environments(args.envs)
    refuse_drafts(envs)
    expected = _path_ids(envs)
    asked = args.refs or pins_in_order()
    if args.only is not None:
        if args.only not in asked:
            print(f"matrix: {args.only} is not among the refs asked for ({', '.join(asked)}); nothing to run")
            return EXIT_OK
        asked = [args.only]
    refs = [(ref, resolve_ref(ref, args.gym_repo)) for ref in asked]  # every ref resolves before anything runs
    out = args.out or report_dir(args.runs_dir, "matrix")  # made when there is something to write
    matrix = run_matrix(refs, expected, _options(args), out, args.acks)
    print_matrix(matrix, write_matrix_reports(matrix, out))
    return matrix.exit_code


def cmd_bisect(args) -> int:
    from gymgate.cases.environments import load_environments, refuse_drafts

    _judged_attempts(args)
    from gymgate.errors import EXIT_FAILED
    from gymgate.harness.bisect import bisect, write_outcome
    from gymgate.harness.matrix import report_dir
    from gymgate.report.bisect import verdict_line

    envs = load_environments(args.envs)
    refuse_drafts(envs)
    everything = _path_ids(envs)
    paths = sorted(_read_paths(args.paths, everything)) if args.paths else None
    result = bisect(args.good, args.bad, args.gym_repo, paths, everything, _options(args), args.acks)
    written = write_outcome(result, args.out or report_dir(args.runs_dir, "bisect"), args.acks)
    print("\n" + verdict_line(result))
    print("written: " + ", ".join(str(p) for p in written))
    return EXIT_FAILED if result.paths else EXIT_OK


def cmd_merge(args) -> int:
    from gymgate.harness.bump import compare_and_report
    from gymgate.report.outputs import read_summary
    from gymgate.report.summary import print_summary, run_document
    from gymgate.runfolder import runs_dir
    from gymgate.shards.merge import baseline_of, gather, merge, point_reruns_at

    sets = gather(args.runs)
    if len(sets) > 2:
        raise UsageError(f"runs of {len(sets)} refs given ({', '.join(s.ref for s in sets)}): merge one or two at once")
    ordered = baseline_of(sets) if len(sets) == 2 else (sets[0],)
    base = args.runs_dir or runs_dir()
    merged = [merge(shard_set, base) for shard_set in ordered]
    for shard_set, run in zip(ordered, merged, strict=True):
        print(f"merged {len(shard_set.runs)} shards of {shard_set.ref}: {run.root}", flush=True)
    if len(merged) == 1:
        code = print_summary(merged[0], pytest_code=merged[0].mark().pytest_exit or 0)
        _print_json(args, run_document(merged[0], code))
        return code
    baseline, candidate = merged
    point_reruns_at(candidate, baseline)
    code = compare_and_report(baseline.root, candidate.root, candidate.root, full=False, acks=args.acks)
    _print_json(args, read_summary(candidate.root))
    return code


def cmd_shard_costs(args) -> int:
    from gymgate.runfolder import RunFolder
    from gymgate.shards.plan import costs_file, measured_costs, render_costs

    costs = measured_costs([RunFolder(r) for r in args.runs])
    if not costs:
        raise UsageError("no environment of these runs started and ran a path: nothing to measure")
    text = render_costs(costs, [r.name for r in args.runs])
    if args.write:
        costs_file().parent.mkdir(parents=True, exist_ok=True)
        costs_file().write_text(text)
        print(f"wrote {costs_file()}")
    else:
        print(text, end="")
    return EXIT_OK


def cmd_compare(args) -> int:
    from gymgate.harness.bump import compare_and_report
    from gymgate.report.outputs import read_summary

    out = args.out or args.candidate
    code = compare_and_report(args.baseline, args.candidate, out, full=args.json_out is None, acks=args.acks)
    _print_json(args, read_summary(out))
    return code


def cmd_ack(args) -> int:
    from gymgate.compare import acks
    from gymgate.compare.runs import compare_runs

    if len(args.runs) > 2:
        raise UsageError("gymgate ack takes one compared candidate run, or a baseline run and a candidate run")
    baseline, candidate = args.runs if len(args.runs) == 2 else (_compared_baseline(args.runs[0]), args.runs[0])
    comparison = compare_runs(baseline, candidate, args.acks)
    pending = {p.path: p.changes for p in comparison.changed}
    directory = args.acks or acks.acks_dir()
    open_changes = [g for g in comparison.change_groups() if g.failing]
    if not open_changes:
        print(f"nothing to acknowledge: no unacknowledged contract change between {baseline} and {candidate}")
        if comparison.exit_code == EXIT_OK and comparison.baseline.get("digest") != comparison.candidate.get("digest"):
            # A clean step is reviewed too: its file links a chain of reviews that longer bumps compose along.
            path, _ = acks.draft(directory, comparison.baseline, comparison.candidate, {})
            print(f"wrote {path}: a reviewed step with nothing to acknowledge (it links chains of reviews)")
        return EXIT_OK
    path, added = acks.draft(directory, comparison.baseline, comparison.candidate, pending)
    print(
        f"wrote {path}: {added} new change(s) to review ({len(open_changes)} unacknowledged in all).\n"
        "Write a one-line reason for each, commit the file, and compare again."
    )
    return EXIT_OK


def _compared_baseline(candidate: Path) -> Path:
    """The baseline run a compared candidate was judged against (its results.json says)."""
    from gymgate.report.outputs import compared_baseline

    found = compared_baseline(candidate)
    if found is None:
        raise UsageError(
            f"{candidate} has no comparison (results.json) to acknowledge; pass BASELINE CANDIDATE run folders"
        )
    return found


COMMANDS = {
    "resolve": cmd_resolve,
    "gym-ref-of": cmd_gym_ref_of,
    "cases": cmd_cases,
    "case": cmd_case,
    "python": cmd_python,
    "env": cmd_env,
    "lock": cmd_lock,
    "up": cmd_up,
    "accept": cmd_accept,
    "matrix": cmd_matrix,
    "bisect": cmd_bisect,
    "compare": cmd_compare,
    "merge": cmd_merge,
    "shard-costs": cmd_shard_costs,
    "ack": cmd_ack,
}
