"""The gymgate command line: resolve refs, build environments, start and check Gym services."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from gymgate.errors import EXIT_ERROR, EXIT_OK, GymgateError, UsageError
from gymgate.refs import resolve_ref
from gymgate.refs.pins import known_pins


def _add_ref_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gym-ref", required=True, help="pin name, index version, local path or git SHA")
    parser.add_argument(
        "--gym-repo",
        help="git URL or path the SHA is resolved in (default: $GYMGATE_GYM_REPO or the upstream repository)",
    )


def _workers(value: str) -> str:
    if value == "auto" or (value.isdigit() and int(value) <= 64):
        return value
    raise argparse.ArgumentTypeError(f"expected 'auto' or a number of workers (0-64), got {value!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gymgate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("resolve", help="resolve a Gym ref and print it as JSON")
    _add_ref_args(p)

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
        p.add_argument("--env", action="append", dest="envs", metavar="NAME", help="limit to this environment")
        p.add_argument("--runs-dir", type=Path, help="where run folders go (default: ./runs or $GYMGATE_RUNS)")
        p.add_argument("--spinup-timeout", type=float, default=600.0, help="seconds one Gym may take to start")
    p.add_argument("--selftest", action="store_true", help="also run gymgate's own negative tests on the real paths")
    p.add_argument("--baseline", metavar="REF", help="compare against this ref (default: the baseline pin)")
    p.add_argument("--no-baseline", action="store_true", help="run the ref alone, without a comparison")
    p.add_argument(
        "--paths",
        action="append",
        metavar="ENV:MODE|@FILE",
        help="only these paths (repeatable; @retry.txt reads one per line)",
    )
    p.add_argument(
        "-n",
        "--workers",
        default="auto",
        type=_workers,
        help="pytest-xdist workers: auto (one per core), N, or 0 for none (default: auto)",
    )
    p = sub.add_parser("compare", help="compare two stored runs (nothing is run)")
    p.add_argument("baseline", type=Path, help="the baseline run folder")
    p.add_argument("candidate", type=Path, help="the candidate run folder")
    p.add_argument(
        "--out",
        type=Path,
        help="folder for report.md, report.html, results.json, junit.xml, retry.txt (default: the candidate run)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except GymgateError as exc:
        print(f"gymgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gymgate: interrupted; every process the run started has been stopped", file=sys.stderr)
        return EXIT_ERROR


def cmd_resolve(args) -> int:
    print(json.dumps(resolve_ref(args.gym_ref, args.gym_repo).to_json(), indent=2))
    return EXIT_OK


def _prepare(args, ref: str | None = None):
    from gymgate.envs.prepare import prepare_env

    ref = ref or args.gym_ref
    source = resolve_ref(ref, args.gym_repo)
    print(f"gym ref {ref!r}: {source.describe()}" + ("" if source.pinned else "  [unpinned]"), flush=True)
    env = prepare_env(source)
    verb = "built" if env.built else "reused"
    print(
        f"environment {env.key}: {verb} in {env.seconds:.1f}s (Python {env.interpreter.version}, {env.path})",
        flush=True,
    )
    return source, env


def cmd_env(args) -> int:
    _prepare(args)
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


def _new_run(args, ref: str | None = None):
    """Resolve, prepare the environment and open a run folder: what `up` and `accept` share."""
    from gymgate.catalog import load_environments
    from gymgate.runner import new_run_dir, new_run_id

    load_environments(args.envs)  # unknown names are a usage error before anything is built
    source, env = _prepare(args, ref)
    run_id = new_run_id()
    run_dir = new_run_dir(source.name, run_id, args.runs_dir)
    (run_dir / "source.json").write_text(json.dumps(source.to_json(), indent=2))
    # The lock travels with the run, so two stored runs can be compared without their checkouts.
    shutil.copyfile(env.project / "uv.lock", run_dir / "uv.lock")
    (run_dir / "environment.json").write_text(
        json.dumps({"key": env.key, "python": env.interpreter.version, "project": str(env.project)}, indent=2)
    )
    print(f"run {run_id}: {run_dir}", flush=True)
    common = ["--run-dir", str(run_dir), "--spinup-timeout", str(args.spinup_timeout)]
    for name in args.envs or []:
        common += ["--env", name]
    return source, env, run_id, run_dir, common


def cmd_up(args) -> int:
    from gymgate.runner import run_in_env
    from gymgate.services.ports import free_port

    _, env, run_id, _, common = _new_run(args)
    child = ["-m", "gymgate.services.up", "--policy-base-url", f"http://127.0.0.1:{free_port()}/v1", *common]
    code = run_in_env(env, child, run_id)
    if code not in (0, 1, 2):
        print(f"gymgate: services run ended with status {code}", file=sys.stderr)
        return EXIT_ERROR
    return code


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
    """One ref through the matrix; unless it is the baseline itself, also the baseline (reused when none of its
    inputs changed) and a comparison of the two, whose verdict decides the exit code."""
    from gymgate.catalog import load_environments
    from gymgate.refs.pins import baseline_pin

    expected = [f"{e.name}:{mode}" for e in load_environments(args.envs) for mode in ("accepted", "rejected")]
    if args.paths:  # validated before anything is built
        wanted = _read_paths(args.paths, expected)
        expected = [p for p in expected if p in wanted]
    base_ref = None if args.no_baseline else (args.baseline or baseline_pin())
    candidate = resolve_ref(args.gym_ref, args.gym_repo)
    if base_ref is None or resolve_ref(base_ref, args.gym_repo).digest == candidate.digest:
        return _accept_one(args, args.gym_ref, expected)[1]
    print(f"== baseline {base_ref}", flush=True)
    base_dir, base_code = _accept_one(args, base_ref, expected, reuse=True)
    print(f"== candidate {args.gym_ref}", flush=True)
    cand_dir, _ = _accept_one(args, args.gym_ref, expected)
    if base_code not in (EXIT_OK, 1):
        print(f"gymgate: error: the baseline {base_ref} could not be judged (see {base_dir})", file=sys.stderr)
        return EXIT_ERROR
    return _compare_and_report(base_dir, cand_dir, cand_dir, full=False)


def _accept_one(args, ref: str, expected: list[str], reuse: bool = False):
    from gymgate.atomic import write_json_atomic
    from gymgate.compare.baseline import find_reusable, inputs_digest
    from gymgate.parallel.progress import Progress
    from gymgate.paths import repo_root
    from gymgate.report.summary import print_summary
    from gymgate.runner import run_in_env, runs_dir

    source, env, run_id, run_dir, common = _new_run(args, ref)
    inputs = inputs_digest(source.digest, run_dir / "uv.lock", env.interpreter.version, expected)
    if reuse:
        stored = find_reusable(args.runs_dir or runs_dir(), inputs)
        if stored is not None:
            shutil.rmtree(run_dir)
            print(f"reusing {stored}: none of its inputs changed (inputs sha256:{inputs[:12]})", flush=True)
            return stored, print_summary(stored, pytest_code=0, expected=expected)
    child = [
        "-m",
        "pytest",
        str(repo_root() / "tests" / "acceptance"),
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(repo_root()),
        "--gym-source",
        str(run_dir / "source.json"),
        "-q",
        "-rfEs",
        *common,
    ]
    if args.workers != "0":
        child += ["-n", args.workers]
    if not args.selftest:
        child += ["-m", "not selftest"]
    if args.paths:
        child += [a for p in expected for a in ("--path", p)]
    log = run_dir / "pytest.log"
    print(f"workers: {args.workers}; pytest output: {log}", flush=True)
    mark = {"run_id": run_id, "complete": False, "started": time.time(), "inputs": inputs}
    write_json_atomic(run_dir / "run.json", mark)  # an interrupted run stays marked incomplete
    with Progress(run_dir, total_paths=len(expected)):
        code = run_in_env(env, child, run_id, cwd=repo_root(), log=log)
    write_json_atomic(run_dir / "run.json", {**mark, "complete": True, "pytest_exit": code, "finished": time.time()})
    if code not in (0, 1):
        tail = log.read_text(errors="replace").splitlines()[-25:]
        print("\n".join(["", f"pytest exited {code}; last lines of {log}:", *tail]), file=sys.stderr)
    return run_dir, print_summary(run_dir, pytest_code=code, expected=expected)


def _compare_and_report(baseline: Path, candidate: Path, out_dir: Path, full: bool) -> int:
    from gymgate.atomic import write_text_atomic
    from gymgate.compare.runs import compare_runs
    from gymgate.report.markdown import render_markdown
    from gymgate.report.outputs import write_html, write_junit, write_results, write_retry

    comparison = compare_runs(baseline, candidate)
    text = render_markdown(comparison)
    written = [write_text_atomic(out_dir / "report.md", text)]
    written += [
        write_results(comparison, out_dir),
        write_junit(comparison, out_dir),
        write_retry(comparison, out_dir),
        write_html(comparison, text, out_dir),
    ]
    # The terminal gets the verdict and the summary table; the files have everything.
    print("\n" + (text if full else text.split("\n### ", 3)[0] + "\n" + _section(text, "### Summary")))
    print("written: " + ", ".join(str(p) for p in written))
    return comparison.exit_code


def _section(text: str, heading: str) -> str:
    if heading not in text:
        return ""
    body = text.split(heading, 1)[1]
    return heading + body.split("\n### ", 1)[0]


def cmd_compare(args) -> int:
    return _compare_and_report(args.baseline, args.candidate, args.out or args.candidate, full=True)


COMMANDS = {
    "resolve": cmd_resolve,
    "env": cmd_env,
    "lock": cmd_lock,
    "up": cmd_up,
    "accept": cmd_accept,
    "compare": cmd_compare,
}
