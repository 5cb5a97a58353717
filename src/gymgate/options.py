"""Every command-line option, declared once: its flag, help, default, the commands that take it, the GYMGATE_*
variable a CI job sets it with, and the flag the in-environment session takes it as.

The parsers of every command (cli.py), the session plugin's pytest options (session/plugin.py), `up`'s child
(session/up.py), the child's command line (harness/run.py) and RunOptions' defaults are all derived from these
declarations, as nox derives its parser and its environment defaults from one `_option_set`. Adding an option is
adding one `Option` here (and reading it where it acts).

A flag on the command line always wins over its variable; a variable that cannot be read is a usage error naming
it (exit 2), never ignored. Variables marked `read_below` are read where their value is used (the runs folder, the
cache, the git repository), so they apply to every caller, not only to the command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate import faults, locations, variants
from gymgate.errors import UsageError

SESSION, UP = "session", "up"  # the in-environment entry points: the pytest session plugin, and `up`'s services run
MAX_WORKERS = 64
MAX_SECONDS = 86400.0
MAX_RERUNS = 10
MAX_ATTEMPTS = 10
MAX_LIVE_ENVS = 64


def workers(value: str) -> str:
    if value == "auto" or (value.isdigit() and int(value) <= MAX_WORKERS):
        return value
    raise argparse.ArgumentTypeError(f"expected 'auto' or a number of workers (0-{MAX_WORKERS}), got {value!r}")


def seconds(value: str) -> float:
    try:
        parsed = float(value)
    except ValueError:
        parsed = -1.0
    if 0 < parsed <= MAX_SECONDS:
        return parsed
    raise argparse.ArgumentTypeError(f"expected a number of seconds (0-{MAX_SECONDS:g}], got {value!r}")


def reruns(value: str) -> int:
    if value.isdigit() and int(value) <= MAX_RERUNS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of reruns (0-{MAX_RERUNS}), got {value!r}")


def attempts(value: str) -> int:
    if value.isdigit() and 1 <= int(value) <= MAX_ATTEMPTS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of attempts (1-{MAX_ATTEMPTS}), got {value!r}")


def live_envs(value: str) -> int:
    if value.isdigit() and 1 <= int(value) <= MAX_LIVE_ENVS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of environments (1-{MAX_LIVE_ENVS}), got {value!r}")


def env_names(raw: str) -> list[str]:
    """GYMGATE_ENVS: names separated by commas or spaces."""
    names = [n for n in raw.replace(",", " ").split() if n]
    if not names:
        raise ValueError("no environment named")
    return names


@dataclass(frozen=True)
class Option:
    """One option. `help` may name `{default}`; the variable (if any) is appended to it. `session` is the flag
    the in-environment entry points in `children` take the value as (None: the harness keeps it)."""

    name: str  # the attribute it parses into (argparse dest, RunOptions field)
    flags: tuple[str, ...]
    help: str
    commands: tuple[str, ...]  # the commands that take it ("cases list", "accept", …)
    default: Any = None
    type: Callable[[str], Any] | None = None
    var: str = ""  # the GYMGATE_* variable that sets it, if any
    read_below: bool = False  # the variable is read where the value is used, not by the parser
    session: str | None = None
    children: tuple[str, ...] = (SESSION,)  # which in-environment entry points take it (when `session` is set)
    extra: Mapping[str, Any] = field(default_factory=dict)  # argparse keywords: action, metavar, required, nargs

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def repeatable(self) -> bool:
        return self.extra.get("action") == "append"

    def help_text(self, variable: bool = True) -> str:
        text = self.help.format(default=self.default)
        return f"{text} (or ${self.var})" if self.var and variable else text

    def variable(self, convert: Callable[[str], Any] | None = None) -> Any:
        """The variable's value read as `convert` (default: the flag's type) reads it; None when unset or empty."""
        raw = os.environ.get(self.var, "").strip() if self.var else ""
        if not raw:
            return None
        try:
            return (convert or self.type or str)(raw)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise UsageError(f"${self.var}={raw!r} (the default of {'/'.join(self.flags)}): {exc}") from None

    def parser_default(self) -> Any:
        """The default the parser uses: the variable's value when it is set (and not read below), else the
        declared one."""
        found = None if self.read_below else self.variable()
        return self.default if found is None else found


REF = ("resolve", "cases list", "case new", "env", "up", "accept")  # commands about one Gym ref
RESOLVING = (*REF, "matrix", "bisect")  # commands that resolve refs
RUNNING = ("up", "accept", "matrix", "bisect")  # commands that start Gyms
JUDGING = ("accept", "matrix", "bisect")  # commands that run paths and judge them
ACKING = ("accept", "matrix", "bisect", "merge", "compare", "ack")  # commands that read acknowledgements

OPTIONS: tuple[Option, ...] = (
    Option("gym_ref", ("--gym-ref",), "pin name, index version, local path or git SHA", REF, extra={"required": True}),
    Option(
        "gym_repo",
        ("--gym-repo",),
        "git URL or path SHAs, tags and branches are resolved in (default: the upstream repository)",
        RESOLVING,
        var="GYMGATE_GYM_REPO",
        read_below=True,
    ),
    Option(
        "cache_dir",
        ("--cache-dir",),
        "environments, resolved refs and git mirrors (default: ~/.cache/gymgate)",
        RESOLVING,
        type=Path,
        var=locations.CACHE_VAR,
        read_below=True,
    ),
    Option(
        "runs_dir",
        ("--runs-dir",),
        "where run folders go (default: runs/ in the checkout)",
        ("case new", "cases list", *RUNNING, "merge"),
        type=Path,
        var="GYMGATE_RUNS",
        read_below=True,
    ),
    Option(
        "envs",
        ("--env",),
        "this environment (repeatable; any case; the variable: comma-separated; default: the `default` set)",
        RUNNING,
        var="GYMGATE_ENVS",
        read_below=True,  # read by the command line once --env and --env-set are known (cli._settle)
        session="--env",
        children=(SESSION, UP),
        extra={"action": "append", "metavar": "NAME"},
    ),
    Option(
        "env_set",
        ("--env-set",),
        "a named set of environments from cases/sets.toml (default: `default`)",
        RUNNING,
        extra={"metavar": "SET"},
    ),
    Option(
        "spinup_timeout",
        ("--spinup-timeout",),
        "seconds one Gym may take to start (default: {default:g})",
        RUNNING,
        default=600.0,
        type=seconds,
        session="--spinup-timeout",
        children=(SESSION, UP),
    ),
    Option(
        "stop_timeout",
        ("--stop-timeout",),
        "seconds one Gym may take to stop gracefully; past it the Gym is killed and the lifecycle check fails "
        "(default: {default:g})",
        RUNNING,
        default=60.0,
        type=seconds,
        session="--stop-timeout",
        children=(SESSION, UP),
    ),
    Option(
        "path_timeout",
        ("--path-timeout",),
        "seconds one rollout may take; past it the path is an ERROR (gym, timeout) and its Gym is torn down "
        "(default: {default:g}). A bump's candidate runs each path under its own deadline, derived from what the "
        "baseline measured for it (acceptance/limits.py), capped by this",
        JUDGING,
        default=180.0,
        type=seconds,
        session="--path-timeout",
    ),
    Option(
        "attempts",
        ("--attempts",),
        "attempts of every path in the same Gym, diffed with each other: a ref that does not do the same thing "
        "twice is nondeterministic (default: {default}; 1 only for a ref run alone, --no-baseline)",
        JUDGING,
        default=2,
        type=attempts,
        var="GYMGATE_ATTEMPTS",
        session="--attempts",
        extra={"metavar": "N"},
    ),
    Option(
        "workers",
        ("-n", "--workers"),
        "pytest-xdist workers: auto (one per core), N, or 0 for none (default: {default})",
        JUDGING,
        default="auto",
        type=workers,
        var="GYMGATE_WORKERS",
    ),
    Option(
        "max_envs",
        ("--max-envs",),
        "at most N environments' Gyms up at once (shared between the workers); the others start in waves, each as "
        "an earlier one's paths are done (default: {default}: each Gym holds ~1 GiB, docs/benchmarks.md)",
        JUDGING,
        default=10,
        type=live_envs,
        var="GYMGATE_MAX_ENVS",
        session="--max-envs",
        extra={"metavar": "N"},
    ),
    Option(
        "share",
        ("--envs-per-gym",),
        "at most N environments in one Gym instance (one Gym actor, head and model server for them, as RL's NemoGym "
        "actor hosts them; environments whose configs name the same server never share). A shared instance that "
        "fails to start or is torn down starts each member again alone, and a path whose attempt errs in a shared "
        "instance is run again alone before it is judged (default: {default})",
        JUDGING,
        default=8,
        type=live_envs,
        var="GYMGATE_ENVS_PER_GYM",
        session="--envs-per-gym",
        extra={"metavar": "N"},
    ),
    Option(
        "cache",
        ("--no-cache",),
        "run every ref afresh, even when a stored clean run has exactly the same inputs (default: serve it)",
        JUDGING,
        default=True,
        extra={"action": "store_false"},
    ),
    Option(
        "replay",
        ("--no-replays",),
        "judge only the hand-written cases (default: also replay every rollout the refs record for the selected "
        "environments: data/example_rollouts.jsonl)",
        JUDGING,
        default=True,
        extra={"action": "store_false"},
    ),
    Option(
        "faults",
        ("--faults",),
        "each environment's fault paths (its accepted case with one model call failing as real servers fail, "
        "gymgate/faults/faults.toml), judged on how Gym handles it: `default` (the default set's faults), `all` "
        "(also those that hang known releases until the path's deadline) or `none` (default: {default})",
        JUDGING,
        default=faults.DEFAULT,
        var="GYMGATE_FAULTS",
        extra={"choices": faults.SELECTIONS},
    ),
    Option(
        "variants",
        ("--variants",),
        "each answer's variants (the same answer written in another form, gymgate/variants/forms.toml), judged "
        "against their original on the same Gym: `default` (the default set's forms), `all` or `none` "
        "(default: {default})",
        JUDGING,
        default=variants.DEFAULT,
        var="GYMGATE_VARIANTS",
        extra={"choices": variants.SELECTIONS},
    ),
    Option(
        "selftest",
        ("--selftest",),
        "also run gymgate's own negative tests on the real paths",
        ("accept",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "baseline",
        ("--baseline",),
        "compare against this ref (default: the baseline pin)",
        ("accept",),
        var="GYMGATE_BASELINE",
        extra={"metavar": "REF"},
    ),
    Option(
        "no_baseline",
        ("--no-baseline",),
        "run the ref alone, without a comparison",
        ("accept",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "shard",
        ("--shard",),
        "run only shard K of N of the environments (balanced by shards/costs.toml); `gymgate merge` combines the "
        "shard runs of each ref into one",
        ("accept",),
        default="",
        extra={"metavar": "K/N"},
    ),
    Option(
        "reruns",
        ("--reruns",),
        "attempts added, in fresh Gym instances, for each path that does not pass on the candidate, on both refs; "
        "mixed outcomes are flaky (default: {default}; 0 disables)",
        ("accept",),
        default=2,
        type=reruns,
        var="GYMGATE_RERUNS",
        extra={"metavar": "N"},
    ),
    Option(
        "paths",
        ("--paths",),
        "only these paths (repeatable; @retry.txt reads one per line)",
        ("accept", "bisect"),
        extra={"action": "append", "metavar": "ENV:MODE|@FILE"},
    ),
    Option(
        "refs",
        ("refs",),
        "Gym refs in order, oldest first (default: every pin)",
        ("matrix",),
        extra={"nargs": "*", "metavar": "REF"},
    ),
    Option(
        "only",
        ("--only",),
        "run just this ref of the matrix (nox's per-pin sessions), with the paths the whole matrix plans (the "
        "recordings of every ref), so the report over every ref finds its run: alone when no REFs are listed, not at "
        "all when REFs are listed without it",
        ("matrix",),
        extra={"metavar": "REF"},
    ),
    Option(
        "reuse_since",
        ("--reuse-since",),
        "also serve a complete stored run with exactly the same inputs that started at or after this time (seconds "
        "since the epoch) whatever its verdict: nox's matrix sessions pass their invocation's start, so the report "
        "over every ref reads the runs the per-pin sessions just made, red ones too (default: only clean runs)",
        ("matrix",),
        default=0.0,
        type=float,
        extra={"metavar": "EPOCH"},
    ),
    Option(
        "ray_address",
        ("--ray-address",),
        "run each ref on an existing Ray cluster (what ray.init takes: HOST:PORT, ray://HOST:10001, auto): every "
        "node with a `gymgate` resource runs units of this command, building the pins' environments itself; the "
        "reports are written here as for a local run (default: run here)",
        JUDGING,
        default="",
        var="GYMGATE_RAY_ADDRESS",
        extra={"metavar": "ADDR"},
    ),
    Option(
        "ray_python",
        ("--ray-python",),
        "the Python the dispatch's Ray driver runs with: its Ray and Python must be the cluster's (default: the "
        "environment of the newest pin)",
        JUDGING,
        default="",
        var="GYMGATE_RAY_PYTHON",
        extra={"metavar": "PYTHON"},
    ),
    Option(
        "good",
        ("--good",),
        "a commit, tag or branch where the paths pass",
        ("bisect",),
        extra={"required": True, "metavar": "REF"},
    ),
    Option(
        "bad",
        ("--bad",),
        "a later commit, tag or branch where they regress",
        ("bisect",),
        extra={"required": True, "metavar": "REF"},
    ),
    Option(
        "out",
        ("--out",),
        "folder the reports are written to (default: runs/<command>-<stamp>; compare: the candidate run)",
        ("matrix", "bisect", "compare"),
        type=Path,
    ),
    Option(
        "acks",
        ("--acks",),
        "reviewed acknowledgements (default: acks/ in the gymgate checkout)",
        ACKING,
        type=Path,
        extra={"metavar": "DIR"},
    ),
    Option(
        "json",
        ("--json",),
        "print the verdict as JSON on stdout (results.json's summary), everything else on stderr",
        ("accept", "merge", "compare"),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "verbose",
        ("-v", "--verbose"),
        "print the whole report on the terminal (report.md), not the one-screen view",
        ("accept", "merge", "compare"),
        default=False,
        extra={"action": "store_true"},
    ),
    # Commands that do not run paths.
    Option("lock", ("lock",), "the uv.lock to read", ("gym-ref-of",), type=Path, extra={"metavar": "UV_LOCK"}),
    Option(
        "list_json",
        ("--json",),
        "print the list as JSON",
        ("cases list",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "name",
        ("name",),
        "the case's name (cases/NAME.toml); also the resources server folder by default",
        ("case new",),
    ),
    Option(
        "server", ("--server",), "the resources server folder (resources_servers/SERVER), if not NAME", ("case new",)
    ),
    Option(
        "config",
        ("--config",),
        "the config file to use, if the server has several (path inside the Gym)",
        ("case new",),
    ),
    Option(
        "row",
        ("--row",),
        "the example row to pin (default: the first)",
        ("case new",),
        default=0,
        type=int,
        extra={"metavar": "N"},
    ),
    Option(
        "force",
        ("--force",),
        "replace an existing draft of that name",
        ("case new",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "keep_scripts",
        ("--keep-scripts",),
        "rerun an existing draft with the scripts a person finished in it (turns, judge, judge_markers)",
        ("case new",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "version", ("version",), "a release declared in src/gymgate/envs/cpython.toml, e.g. 3.13.15", ("python build",)
    ),
    Option(
        "source",
        ("--source",),
        "the source tarball (default: fetched from Debian's archive)",
        ("python build",),
        type=Path,
    ),
    Option(
        "sha256", ("--sha256",), "the tarball's digest, when it is not the one cpython.toml declares", ("python build",)
    ),
    Option("requires_python", ("requires_python",), "e.g. '>=3.13.14'", ("python ensure",), extra={"metavar": "SPEC"}),
    Option("pins", ("pins",), "pins to relock (default: all)", ("lock",), extra={"nargs": "*"}),
    Option(
        "upgrade",
        ("--upgrade",),
        "let uv pick newer versions within exclude-newer",
        ("lock",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option(
        "runs",
        ("runs",),
        "run folders (merge: the shard runs of one or two refs; shard-costs: finished runs, the median is kept; "
        "ack: a compared candidate run, or BASELINE CANDIDATE)",
        ("merge", "shard-costs", "ack"),
        type=Path,
        extra={"nargs": "+", "metavar": "RUN"},
    ),
    Option(
        "write",
        ("--write",),
        "write shards/costs.toml (default: print it)",
        ("shard-costs",),
        default=False,
        extra={"action": "store_true"},
    ),
    Option("baseline_run", ("baseline",), "the baseline run folder", ("compare",), type=Path),
    Option("candidate_run", ("candidate",), "the candidate run folder", ("compare",), type=Path),
    # The in-environment session's own: the harness passes them, a person running the plugin by hand may.
    Option(
        "run_dir",
        ("--run-dir",),
        "run folder for results (the session's default: a temp dir)",
        ("unit",),
        session="--run-dir",
        children=(SESSION, UP),
    ),
    Option("spec", ("spec",), "the unit's spec (remote/spec.py), written by the caller", ("unit",), type=Path),
    Option(
        "only_paths",
        ("--path",),
        "only this path id, e.g. mcqa:accepted (repeatable)",
        (),
        session="--path",
        extra={"action": "append"},
    ),
)
BY_NAME = {o.name: o for o in OPTIONS}
VARIABLES = tuple(o for o in OPTIONS if o.var)  # what README's table of GYMGATE_* variables lists
# The variables read where their value is used (read_below), named for those readers.
GYM_REPO_VAR, CACHE_VAR, RUNS_VAR = (BY_NAME[n].var for n in ("gym_repo", "cache_dir", "runs_dir"))


def default(name: str) -> Any:
    """An option's declared default (not its variable's value): what a run gets when nobody set it."""
    return BY_NAME[name].default


def add_to(parser: argparse.ArgumentParser, command: str) -> None:
    """Every option `command` takes, in declaration order. Reads the GYMGATE_* defaults (a bad one: UsageError)."""
    for option in OPTIONS:
        if command in option.commands:
            kwargs = {"help": option.help_text(), **option.extra}
            if option.type is not None:
                kwargs["type"] = option.type
            if option.positional:  # shown as its flag, parsed into its name
                kwargs.setdefault("metavar", option.flags[0])
                parser.add_argument(option.name, **kwargs)
                continue
            parser.add_argument(*option.flags, dest=option.name, default=option.parser_default(), **kwargs)


def session_options(child: str = SESSION) -> list[Option]:
    return [o for o in OPTIONS if o.session and child in o.children]


def add_session_options(addoption: Callable[..., Any], child: str = SESSION) -> None:
    """The options an in-environment entry point takes (a pytest parser's `addoption`, or an argparse
    `add_argument`): each with its declared default, never a variable's (the harness always passes the value it
    means)."""
    for option in session_options(child):
        kwargs: dict[str, Any] = {
            "help": option.help_text(variable=False),
            "dest": option.name,
            "default": option.default,
        }
        if option.repeatable:
            kwargs["action"] = "append"
        if option.type is not None:  # the command line's own reader: a value the harness could not pass is refused
            kwargs["type"] = option.type
        addoption(option.session, **kwargs)


def child_argv(child: str, run_options: Any, **values: Any) -> list[str]:
    """The command line of an in-environment entry point: each option it takes, from `values` or else the run
    options' attribute of that name; a list repeats its flag, None is left out."""
    argv: list[str] = []
    for option in session_options(child):
        value = values[option.name] if option.name in values else getattr(run_options, option.name, None)
        if value is None:
            continue
        for item in value if option.repeatable else [value]:
            argv += [option.session, str(item)]
    return argv


def bind(function: Callable[..., Any], parsed: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments `function` takes, from a parsed command line: a parameter typed as a dataclass is that
    value, its fields filled by name (the run's options as one value); any other parameter is the parsed value of its
    name, or its own default when the command has no such option. The command line stops here: what a command's
    function receives is typed values, never the parsed namespace."""
    hints = typing.get_type_hints(function)
    bound: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        kind = hints.get(name)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            bound[name] = values(kind, parsed)
        elif hasattr(parsed, name):
            bound[name] = getattr(parsed, name)
        elif parameter.default is inspect.Parameter.empty:
            raise TypeError(f"{function.__module__}.{function.__qualname__}: no option {name!r} for it")
    return bound


def values(kind: type, parsed: Any) -> Any:
    """A dataclass of option values, each field from the parsed value of its name (a field no option fills keeps
    its default)."""
    return kind(**{f.name: getattr(parsed, f.name) for f in dataclasses.fields(kind) if hasattr(parsed, f.name)})
