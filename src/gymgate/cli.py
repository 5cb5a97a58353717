"""The gymgate command line: parse (every option is declared in gymgate.options), then one call per command into
the module that owns its workflow. Errors become the exit codes gymgate.errors declares here (EXIT_CODES)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gymgate import __version__, options, streams
from gymgate.errors import EXIT_CODES, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, GymgateError, UsageError
from gymgate.locations import folder_list
from gymgate.processes import terminate_as_interrupt

EXIT_FILE = "GYMGATE_EXIT_FILE"  # where the exit code is also written (nox sessions read it)


@dataclass(frozen=True)
class Command:
    """One command: what `--help` says and the function (module:name) that carries it out. The function takes the
    values it names, typed (options.bind), and returns the exit code, or (exit code, the verdict document --json
    prints)."""

    name: str  # "accept", or "<group> <name>" ("cases list")
    help: str
    target: str
    description: str = ""
    examples: tuple[str, ...] = ()  # command lines `--help` shows, each a string a user can paste
    internal: bool = False  # what gymgate runs itself (a cluster node's unit): not listed by --help

    @property
    def judges(self) -> bool:
        """It ends in a verdict (options.JUDGED_COMMANDS): its result alone on stdout, --json."""
        return self.name in options.JUDGED_COMMANDS

    def run(self, args: argparse.Namespace) -> int | tuple[int, dict]:
        module, name = self.target.split(":")
        function: Callable = getattr(importlib.import_module(module), name)
        return function(**options.bind(function, args))


GROUPS = {
    "cases": "the Gym environments of a ref and gymgate's cases for them",
    "case": "draft a case for a Gym environment",
    "python": "the interpreters gymgate can use, and CPython built into its cache",
}
PYTHON = "gymgate.envs.provide:python_command"
COMMANDS = (
    Command("resolve", "resolve a Gym ref and print it as JSON", "gymgate.cli:resolve"),
    Command(
        "config",
        "every setting's effective value and where it came from (a GYMGATE_* variable, gymgate.toml or "
        "[tool.gymgate] found from this directory up, or gymgate's default)",
        "gymgate.options.config:config_command",
    ),
    Command(
        "init",
        "set gymgate up in your RL repository: gymgate.toml, folders for your reviews and cases, a CI workflow",
        "gymgate.adoption.init:init_command",
        "Writes into the working directory, keeping whatever exists: gymgate.toml (the baseline your uv.lock pins, "
        "the environment set, your acks and cases folders, the RL profile), gymgate/acks/ and gymgate/cases/, "
        ".github/workflows/gymgate.yml (installing gymgate with `uv tool install` from --from, or from where this "
        "gymgate was installed from), and .gymgate/ in .gitignore.",
        examples=("gymgate init --from git+https://github.com/your-org/gymgate@v0.1.0",),
    ),
    Command(
        "gym-ref-of",
        "print the Gym ref a uv.lock pins (a version, or a git commit): what a CI job on a bump judges",
        "gymgate.refs.lockref:gym_ref_of_command",
    ),
    Command(
        "cases list",
        "which environments of a Gym have example data, which have a case, which cannot run here and why",
        "gymgate.listing:list_command",
    ),
    Command(
        "case new",
        "draft cases/NAME.toml for a Gym environment, run both paths on the ref, write what they observed",
        "gymgate.harness.draft:case_new",
        "Finds the environment's config and servers, pins an example row by SHA256, drafts the accepted and "
        "rejected model scripts from the row's own answer or expected action, runs both paths on the real Gym and "
        "writes the observed reward and verifier fields as the expected values. The case stays marked [draft] "
        "(never judged) until a person reviews it. Exit 0 when accepted earned the top reward and rejected less, 1 "
        "when they did not separate (the draft says which).",
        examples=("gymgate case new mcqa --gym-ref 0.7.0",),
    ),
    Command("python list", "every CPython found (PATH, pyenv, gymgate's builds, uv's), with its build", PYTHON),
    Command("python build", "build a CPython release from its source tarball into gymgate's cache, once", PYTHON),
    Command("python ensure", "an interpreter meeting a requirement: found, else built (what tests need)", PYTHON),
    Command("env", "build (or reuse) the locked environment of a Gym ref", "gymgate.cli:env"),
    Command("lock", "regenerate envs/<pin>/pyproject.toml and uv.lock", "gymgate.envs.prepare:lock_command"),
    Command(
        "up",
        "start every acceptance environment's Gym services, check them, stop them",
        "gymgate.harness.accept:up",
    ),
    Command(
        "accept",
        "judge a bump: run a Gym ref and its baseline through the acceptance paths, compare, report",
        "gymgate.harness.accept:accept",
        "Builds each ref's locked environment, starts its real Gym services, runs every selected path (hand-written "
        "answers, recorded rollouts, faults, other forms of the answers) through RL's consumer boundary against a "
        "deterministic model endpoint, and compares the candidate with the baseline. Writes a run folder per ref and "
        "report.md, report.html and results.json into the candidate's; prints the verdict.",
        examples=(
            "gymgate accept --gym-ref 0.7.0 --baseline 0.4.0",
            "gymgate accept --gym-ref 0.7.0 --baseline 0.4.0 --env mcqa --env code_gen",
            "gymgate accept --gym-ref ../Gym --baseline 0.7.0 --paths @runs/<run>/retry.txt",
            "gymgate accept --gym-ref 0.7.0 --no-baseline",
            "gymgate accept --gym-ref 0.7.0 --baseline 0.6.0 --load",
        ),
    ),
    Command(
        "matrix",
        "run many refs in order (default: every pin) and judge the bump between each pair of neighbours",
        "gymgate.harness.matrix:matrix_command",
        "Each ref runs once, or is served from the cache when none of its inputs changed. Writes matrix.md and "
        "matrix.html (a refs x paths table, then every neighbouring bump) and each bump's full report. Exit: the "
        "last bump's verdict.",
        examples=("gymgate matrix", "gymgate matrix 0.4.0 0.6.0 0.7.0 --env mcqa"),
    ),
    Command(
        "bisect",
        "find the first commit between a good and a bad ref at which paths regress",
        "gymgate.harness.bisect:bisect_command",
        "Walks first-parent history between --good and --bad, running only the chosen paths (default: those that "
        "regress from good to bad) and their environments. Commits that cannot be built or started are skipped; "
        "unsure ones are rerun in fresh Gyms. Writes bisect.md, bisect.json and the comparison of the last good and "
        "the first bad commit. Exit 1: a first bad commit (or its suspects) was found; 0: nothing regresses.",
        examples=(
            "gymgate bisect --good v0.4.0 --bad main --env mcqa",
            "gymgate bisect --good v0.6.0 --bad v0.7.0 --load-metric math_with_judge:cpu_per_rollout",
            "gymgate bisect --good v0.6.0 --bad v0.7.0 --gym-test "
            "resources_servers/math_with_judge/tests/test_app.py::TestApp::test_verify",
        ),
    ),
    Command(
        "merge",
        "combine shard runs (accept --shard K/N) of each ref into one run; with two refs, compare them",
        "gymgate.harness.shards:merge_command",
        "Groups the runs by ref; each group must be every shard of one split, with the same inputs, finished, not "
        "overlapping. Writes one merged run per ref (like an unsharded run: it compares, reports and is served from "
        "the cache the same way). Given the shards of a baseline and a candidate, compares the merged runs and "
        "exits with the verdict; one ref: its own verdict.",
        examples=("gymgate merge runs/0.4.0-* runs/0.7.0-*",),
    ),
    Command(
        "shard-costs",
        "measure each environment's cost from stored runs (what accept --shard balances by)",
        "gymgate.harness.shards:shard_costs_command",
    ),
    Command(
        "compare",
        "compare two stored runs (nothing is run)",
        "gymgate.harness.review:compare_command",
        "Judges the bump between two run folders as accept would and writes the reports (default: into the "
        "candidate run).",
        examples=("gymgate compare runs/0.4.0-<stamp> runs/0.7.0-<stamp>",),
    ),
    Command(
        "unit",
        "(what a cluster node runs) one run of a ref as a --ray-address caller planned it, into --run-dir",
        "gymgate.harness.unit:unit_command",
        internal=True,
    ),
    Command(
        "ack",
        "draft acknowledgements of a comparison's contract changes (acks/<baseline>-to-<candidate>.toml)",
        "gymgate.harness.review:ack_command",
        "Writes every unacknowledged contract change of the comparison into the ack file of its ref pair, with an "
        "empty reason. Fill in each reason and commit the file; an entry without one covers nothing.",
        examples=("gymgate ack runs/0.7.0-<stamp>",),
    ),
)


DESCRIPTION = (
    "Judge a NeMo Gym bump before an RL framework takes it: each Gym ref's real services from a locked environment, "
    "RL's consumer boundary re-implemented, the candidate compared with the baseline path by path."
)
EXAMPLES = (
    "gymgate accept --gym-ref 0.7.0 --baseline 0.4.0   # is 0.4.0 -> 0.7.0 safe?",
    "gymgate matrix                                    # every pin, each bump judged",
    "gymgate ack runs/<candidate run>                  # draft reviews of contract changes",
)


def exit_codes_text() -> str:
    """The exit-code table, each meaning wrapped under itself to the terminal's width."""
    width = min(shutil.get_terminal_size().columns, 100)
    rows = (
        textwrap.fill(e.meaning, width, initial_indent=f"  {e.code:<4} {e.name:<12} ", subsequent_indent=" " * 20)
        for e in EXIT_CODES
    )
    return "exit codes:\n" + "\n".join(rows)


def _epilog(examples: tuple[str, ...]) -> str:
    shown = ("examples:\n" + "\n".join(f"  {line}" for line in examples) + "\n\n") if examples else ""
    return (
        shown
        + exit_codes_text()
        + "\n\nEvery command, option and variable: docs/reference/ (nox -s docs builds the site)."
    )


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions wrapped to the terminal, epilogs (examples, the exit-code table) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(("examples:", "exit codes:")):
            return super()._fill_text(text, width, indent)
        return argparse.HelpFormatter._fill_text(self, text, width, indent)


def build_parser() -> argparse.ArgumentParser:
    """Every command's parser, its options from gymgate.options (reading the GYMGATE_* defaults: one that cannot
    be read is a usage error). Internal commands parse as any other and are left out of the listings."""
    parser = argparse.ArgumentParser(
        prog="gymgate", description=DESCRIPTION, epilog=_epilog(EXAMPLES), formatter_class=_Formatter
    )
    parser.add_argument("--version", action="version", version=f"gymgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for command in COMMANDS:
        group, _, leaf = command.name.rpartition(" ")
        if group and group not in groups:
            groups[group] = sub.add_parser(
                group,
                help=GROUPS[group],
                description=GROUPS[group],
                epilog=exit_codes_text(),
                formatter_class=_Formatter,
            ).add_subparsers(dest=f"{group}_command", required=True, title="commands", metavar="COMMAND")
        where = groups[group] if group else sub
        listed = {} if command.internal else {"help": command.help}  # no help: argparse does not list it
        p = where.add_parser(
            leaf,
            **listed,
            description=command.description or command.help,
            epilog=_epilog(command.examples),
            formatter_class=_Formatter,
        )
        p.set_defaults(handler=command)
        options.add_to(p, command.name)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
    except SystemExit as exc:  # argparse itself: --help and --version (0), a usage error (2)
        _tell_nox(exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_USAGE)
        raise
    _tell_nox(code)
    return code


def _tell_nox(code: int) -> None:
    exit_file = os.environ.get(EXIT_FILE)  # how `nox -s …` learns the exit code through nox's own runner
    if exit_file:
        Path(exit_file).write_text(str(code))


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _settle(args)
    except UsageError as exc:
        print(f"gymgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    terminate_as_interrupt()
    if not args.handler.judges:
        return _run(args)
    with streams.split(json=getattr(args, "json", False)):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        result = args.handler.run(args)
    except GymgateError as exc:
        print(f"gymgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gymgate: interrupted; every process the run started has been stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`… | head`): not a crash, and no verdict either
        streams.discard()
        return EXIT_INTERRUPTED
    except Exception as exc:  # gymgate's own crash: never a verdict (exit 1 means "regression")
        from gymgate.runfolder import write_crash  # noqa: PLC0415 - CLI start-up: a command loads only what it runs

        where = write_crash(exc)
        print(f"gymgate: internal error: {type(exc).__name__}: {exc} (trace: {where})", file=sys.stderr)
        return EXIT_INTERNAL
    code, document = result if isinstance(result, tuple) else (result, None)
    if getattr(args, "json", False) and document is not None:  # --json: declared on the judging commands only
        streams.write_document(document)
    return code


def _settle(args: argparse.Namespace) -> None:
    """What the parsed values imply before a command runs: --cache-dir for this process and every child, and the
    environments asked for (--env names, then GYMGATE_ENVS when neither --env nor --env-set was given)."""
    from gymgate.services import launcher  # noqa: PLC0415 - CLI start-up: a command loads only what it runs

    launcher.checked_mode()  # read where Gyms start (services/launcher/service.py): refused before anything runs
    options.config.export_read_below()  # the repository's settings, for what reads its variable where it acts
    options.apply_settings(args)
    if getattr(args, "cache_dir", None) is not None:  # the flag wins, for this process and every child
        os.environ[options.BY_NAME["cache_dir"].var] = str(args.cache_dir.resolve())
    if getattr(args, "cases", None):  # the flag wins, for this process and every child (cases are read in both)
        os.environ[options.BY_NAME["cases"].var] = os.pathsep.join(str(p.resolve()) for p in args.cases)
    if hasattr(args, "acks") and args.acks is None:  # a flag wins over the variable (and the settings it carries)
        args.acks = options.BY_NAME["acks"].variable(folder_list)
    if hasattr(args, "env_set"):
        from gymgate.cases.environments import names_asked  # noqa: PLC0415 - CLI start-up: a command loads only what it runs

        if args.envs is None and args.env_set is None:  # a flag wins over the variable, the variable over the file
            args.envs = options.BY_NAME["envs"].variable(options.env_names)
            if args.envs is None or options.BY_NAME["envs"].var in options.config.EXPORTED:
                args.env_set = options.config.settings().values.get("env_set")
        args.envs = names_asked(args.envs, args.env_set)


def resolve(gym_ref: str, gym_repo: str | None) -> int:
    from gymgate.refs import resolve_ref  # noqa: PLC0415 - CLI start-up: a command loads only what it runs

    print(json.dumps(resolve_ref(gym_ref, gym_repo).to_json(), indent=2))
    return EXIT_OK


def env(gym_ref: str, gym_repo: str | None) -> int:
    from gymgate.harness.run import prepare  # noqa: PLC0415 - CLI start-up: a command loads only what it runs
    from gymgate.refs import resolve_ref  # noqa: PLC0415 - CLI start-up: a command loads only what it runs

    prepare(resolve_ref(gym_ref, gym_repo))
    return EXIT_OK
