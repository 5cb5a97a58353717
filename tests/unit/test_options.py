"""Options declared once (gymgate/options.py): every parser, the in-environment entry points' options, the child's
command line and RunOptions' defaults are derived from the one declaration, so they cannot drift apart."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import fields

import pytest

from gymgate import options
from gymgate.cli import COMMANDS, build_parser
from gymgate.errors import UsageError
from gymgate.harness.run import SESSION_ENVIRONMENT, service_args, session_args
from gymgate.harness.run_options import RunOptions
from gymgate.runfolder import RunFolder


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for word in name.split():
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def test_each_command_takes_exactly_its_declared_options():
    parser = build_parser()
    for command in COMMANDS:
        sub = _subparser(parser, command.name)
        dests = {a.dest for a in sub._actions if a.dest not in ("help", "handler")}
        declared = {o.name for o in options.OPTIONS if command.name in o.commands}
        assert dests == declared, command.name
    assert {c for o in options.OPTIONS for c in o.commands} <= {c.name for c in COMMANDS}


def test_no_flag_is_declared_twice_for_one_command():
    for command in COMMANDS:
        flags = [f for o in options.OPTIONS if command.name in o.commands for f in o.flags]
        assert len(flags) == len(set(flags)), command.name
    assert len(options.BY_NAME) == len(options.OPTIONS)


def test_run_options_defaults_are_the_declared_ones():
    defaults = RunOptions()
    for f in fields(RunOptions):
        if f.name in options.BY_NAME and options.BY_NAME[f.name].default is not None:
            assert getattr(defaults, f.name) == options.default(f.name), f.name
    # what a command line parses into is what RunOptions carries
    args = build_parser().parse_args(["accept", "--gym-ref", "0.4.0", "--stop-timeout", "7", "--attempts", "3"])
    opts = options.values(RunOptions, args)
    assert (opts.stop_timeout, opts.attempts, opts.spinup_timeout) == (7.0, 3, options.default("spinup_timeout"))


def test_every_command_takes_typed_values_it_can_be_given():
    """Each command's function names what it takes (a typed parameter, or a dataclass of them: the run's options,
    what was asked); every name is an option the command declares, so nothing below the command line reads the
    parsed namespace, and a parameter no option fills is refused before anything runs."""
    import importlib
    import inspect

    from gymgate.cli import COMMANDS

    parser = build_parser()
    for command in COMMANDS:
        module, name = command.target.split(":")
        function = getattr(importlib.import_module(module), name)
        assert "args" not in inspect.signature(function).parameters, command.name
        argv = {
            "python build": ["python", "build", "3.13.15"],
            "python ensure": ["python", "ensure", ">=3.13"],
            "python list": ["python", "list"],
            "gym-ref-of": ["gym-ref-of", "uv.lock"],
            "case new": ["case", "new", "x", "--gym-ref", "0.4.0"],
            "cases list": ["cases", "list", "--gym-ref", "0.4.0"],
            "matrix": ["matrix"],
            "bisect": ["bisect", "--good", "a", "--bad", "b"],
            "merge": ["merge", "r"],
            "shard-costs": ["shard-costs", "r"],
            "compare": ["compare", "a", "b"],
            "unit": ["unit", "spec"],
            "ack": ["ack", "r"],
            "lock": ["lock"],
            "config": ["config"],
            "init": ["init"],
        }.get(command.name, [command.name, "--gym-ref", "0.4.0"])
        bound = options.bind(function, parser.parse_args(argv))
        params = inspect.signature(function).parameters.values()
        required = {p.name for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        assert required <= set(bound), command.name  # everything it cannot do without comes from its options
        for name, value in bound.items():  # a dataclass parameter arrives as that value, not as the namespace
            assert not isinstance(value, argparse.Namespace), (command.name, name)

    def wants_more(gym_ref: str, nonesuch: int) -> int:
        return 0

    with pytest.raises(TypeError, match="no option 'nonesuch'"):
        options.bind(wants_more, parser.parse_args(["resolve", "--gym-ref", "0.4.0"]))


@pytest.mark.parametrize(("child", "builder"), [(options.SESSION, "session"), (options.UP, "up")])
def test_the_childs_command_line_parses_back_into_the_same_values(tmp_path, child, builder):
    """The harness writes the child's argv and the child parses it with options derived from the same
    declarations: every value survives the trip (a renamed flag on one side fails here)."""
    opts = RunOptions(envs=["mcqa", "code_gen"], spinup_timeout=11.5, stop_timeout=3.0, path_timeout=9.0, attempts=4)
    run = RunFolder(tmp_path / "run")
    if builder == "session":
        argv = session_args(run, opts, ["mcqa:accepted"])
        argv = argv[argv.index("-rfEs") + 1 :]
        argv = argv[: argv.index("-n")] if "-n" in argv else argv
    else:
        argv = service_args(run, opts)
    parser = argparse.ArgumentParser()
    options.add_session_options(parser.add_argument, child)
    parsed = parser.parse_args(argv)
    assert parsed.run_dir == str(run.root) and parsed.envs == ["mcqa", "code_gen"]
    assert (parsed.spinup_timeout, parsed.stop_timeout) == (11.5, 3.0)
    if builder == "session":
        assert (parsed.path_timeout, parsed.attempts, parsed.only_paths) == (9.0, 4, ["mcqa:accepted"])
    else:
        assert not hasattr(parsed, "attempts")  # `up` runs no paths


def test_a_variable_sets_a_default_and_the_flag_wins(monkeypatch):
    monkeypatch.setenv("GYMGATE_ATTEMPTS", "5")
    assert build_parser().parse_args(["matrix"]).attempts == 5
    assert build_parser().parse_args(["matrix", "--attempts", "3"]).attempts == 3
    monkeypatch.setenv("GYMGATE_ATTEMPTS", "0")
    with pytest.raises(UsageError, match="GYMGATE_ATTEMPTS"):
        build_parser()


def test_the_session_loads_only_its_own_pytest_plugins(tmp_path):
    """A pytest plugin that Gym's dependencies install (hydra's, anyio's) is never loaded into the session: it
    would cost every worker its import, and could change how the session runs. xdist is loaded by name."""
    site = tmp_path / "site"
    dist = site / "gg_hostile-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gg-hostile\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\nhostile = gg_hostile_plugin\n")
    (site / "gg_hostile_plugin.py").write_text("raise RuntimeError('a plugin of the environment was loaded')\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    argv = session_args(RunFolder(tmp_path / "run"), RunOptions(), None)
    plugins = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-p" and argv[i + 1] != "gymgate.session.plugin"]
    assert "xdist.plugin" in plugins
    command = [sys.executable, "-m", "pytest", *(f"-p{p}" for p in plugins), "-q", str(tmp_path / "test_one.py")]
    env = dict(os.environ, PYTHONPATH=str(site))
    done = subprocess.run(command, env={**env, **SESSION_ENVIRONMENT}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    autoloaded = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert "a plugin of the environment was loaded" in autoloaded.stdout + autoloaded.stderr


def test_help_shows_each_option_under_its_group_and_every_setting_is_declared(capsys, monkeypatch):
    """`--help` reads as the declarations are grouped; the settings only a variable sets are declared with the
    options (the generated reference lists them all), and a value they cannot take is refused, naming the variable."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["accept", "--help"])
    shown = capsys.readouterr().out
    for group in options.GROUPS:
        if any("accept" in o.commands for o in group.options):
            assert f"\n{group.title}:\n" in shown, group.title
    listed = shown.index("which paths:")
    assert listed < shown.index("  --faults", listed) < shown.index("how paths run:")
    names = {v.var for v in options.VARIABLES}
    assert {"GYMGATE_LAUNCHER", "GYMGATE_PYTHON_DOWNLOADS", "GYMGATE_PYTHON_BUILD", "GYMGATE_PYTHON_BUILDS"} <= names
    monkeypatch.setenv("GYMGATE_PYTHON_BUILD", "sometimes")
    with pytest.raises(UsageError, match=r"\$GYMGATE_PYTHON_BUILD='sometimes': expected one of never"):
        options.PYTHON_BUILD.value()
    monkeypatch.setenv("GYMGATE_PYTHON_BUILD", "NEVER")
    assert options.PYTHON_BUILD.value() == "never"
