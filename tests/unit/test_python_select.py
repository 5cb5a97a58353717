"""Interpreter choice: the oldest that satisfies requires-python, or an error naming both sides."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gymgate.envs import python as py
from gymgate.envs.python import Interpreter, discover, select
from gymgate.errors import EXIT_UNJUDGED, InfraError

FOUND = [
    Interpreter(Path("/p/3.11.7/bin/python3"), "3.11.7", "CPython"),
    Interpreter(Path("/p/3.12.1/bin/python3"), "3.12.1", "CPython"),
    Interpreter(Path("/p/3.13.0/bin/python3"), "3.13.0", "CPython"),
]


def test_lowest_satisfying_interpreter_is_chosen():
    assert select(">=3.12", "gym", FOUND).version == "3.12.1"
    assert select(">=3.13", "gym", FOUND).version == "3.13.0"
    assert select("", "gym", FOUND).version == "3.11.7"


def test_uv_is_asked_only_when_the_machines_own_interpreters_do_not_satisfy(monkeypatch):
    asked = []
    monkeypatch.setattr(py, "discover", lambda include_uv=True: asked.append(include_uv) or FOUND)
    assert select(">=3.12", "gym").version == "3.12.1"
    assert asked == [False]
    monkeypatch.setattr(py, "uv_install", lambda spec: [])
    monkeypatch.setattr(py, "builds_allowed", lambda: False)
    with pytest.raises(InfraError):
        select(">=3.14", "gym")
    assert asked == [False, False, True]


def test_unsatisfiable_requirement_with_downloads_and_builds_off_names_every_remedy(monkeypatch):
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.setenv("GYMGATE_PYTHON_BUILD", "never")
    monkeypatch.setattr(py, "uv_install", lambda spec: pytest.fail("uv was asked to download"))
    monkeypatch.setattr(py.cpython_source, "provide_release", lambda *a, **k: pytest.fail("a build was started"))
    with pytest.raises(InfraError) as info:
        select(">=3.13.14", "nemo-gym 0.5.0", FOUND)
    message = str(info.value)
    assert "nemo-gym 0.5.0 requires Python >=3.13.14" in message
    assert "3.11.7 (/p/3.11.7/bin/python3), 3.12.1 (/p/3.12.1/bin/python3), 3.13.0" in message
    assert "Downloads are off (UV_PYTHON_DOWNLOADS=never)" in message
    assert "Building one is off (GYMGATE_PYTHON_BUILD=never)" in message
    # Remedy one is a command a nox user can type (never a path inside .nox/).
    assert "`nox -s python -- build 3.13.15`" in message and ".nox/" not in message
    assert "let uv download one" in message  # remedy two
    assert info.value.exit_code == EXIT_UNJUDGED


def test_a_missing_interpreter_is_provided_by_the_command_itself_and_announced(monkeypatch, capsys, tmp_path):
    """What a new user's first `nox -s accept` hits: nothing on the machine meets 0.7.0's floor and uv cannot
    download, so gymgate builds the declared CPython into its cache, saying so (and how long it takes) first."""
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.delenv("GYMGATE_PYTHON_BUILD", raising=False)
    built = tmp_path / "cpython-3.13.15" / "bin" / "python3"
    built.parent.mkdir(parents=True)
    built.symlink_to(sys.executable)
    asked = []
    monkeypatch.setattr(py.cpython_source, "provide_release", lambda release, log=print: asked.append(release) or built)
    monkeypatch.setattr(py, "probe", lambda path, known=None: Interpreter(path, "3.13.15", "CPython"))
    chosen = select(">=3.13.14", "nemo-gym 0.7.0", FOUND)
    assert chosen.path == built and [r.version for r in asked] == ["3.13.15"]
    said = capsys.readouterr().err
    assert "nemo-gym 0.7.0 requires Python >=3.13.14" in said
    assert f"Providing CPython 3.13.15 in gymgate's cache, once: {py.cpython.BUILD_DURATION}" in said


def test_a_failed_build_is_an_infrastructure_error_naming_typeable_remedies(monkeypatch):
    from gymgate.errors import BuildError

    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.delenv("GYMGATE_PYTHON_BUILD", raising=False)

    def fails(release, log=print):
        raise InfraError("apt-get source failed (exit 100)")

    monkeypatch.setattr(py.cpython_source, "provide_release", fails)
    with pytest.raises(InfraError) as info:
        select(">=3.13.14", "nemo-gym 0.7.0", FOUND)
    assert not isinstance(info.value, BuildError)  # the machine's problem: the ref is not BROKEN
    assert "apt-get source failed" in str(info.value)
    assert "`nox -s python -- build 3.13.15 --source <tarball> --sha256 <digest>`" in str(info.value)


def test_gymgates_own_switch_forbids_downloads_too(monkeypatch):
    monkeypatch.delenv("UV_PYTHON_DOWNLOADS", raising=False)
    monkeypatch.setenv("GYMGATE_PYTHON_DOWNLOADS", "never")
    assert not py.downloads_allowed()
    monkeypatch.setenv("GYMGATE_PYTHON_DOWNLOADS", "")
    assert py.downloads_allowed()


def test_with_downloads_allowed_uv_installs_a_matching_interpreter(monkeypatch):
    monkeypatch.delenv("UV_PYTHON_DOWNLOADS", raising=False)
    monkeypatch.delenv("GYMGATE_PYTHON_DOWNLOADS", raising=False)
    managed = Interpreter(Path("/uv/cpython-3.13.15/bin/python3"), "3.13.15", "CPython", "3.13.15 (main) [Clang]")
    asked = []
    monkeypatch.setattr(py, "uv_install", lambda spec: asked.append(spec) or [*FOUND, managed])
    assert select(">=3.13.14", "nemo-gym 0.7.0", FOUND) == managed
    assert asked == [">=3.13.14"]
    monkeypatch.setattr(py, "uv_install", lambda spec: [])  # uv could not reach its downloads
    monkeypatch.setenv("GYMGATE_PYTHON_BUILD", "never")
    with pytest.raises(InfraError, match="uv could not download one"):
        select(">=3.13.14", "nemo-gym 0.7.0", FOUND)


def test_invalid_specifier_is_reported():
    with pytest.raises(InfraError, match="invalid requires-python"):
        select(">=three", "gym", FOUND)


def test_discovery_finds_the_running_interpreter_and_skips_shims():
    found = discover()
    running = ".".join(map(str, sys.version_info[:3]))
    assert running in {i.version for i in found}
    assert all("shims" not in i.path.parts for i in found)
    assert [i.version for i in found] == sorted({i.version for i in found}, key=lambda v: tuple(map(int, v.split("."))))


def test_probe_answers_are_cached_by_path_size_and_mtime(cache, monkeypatch):
    import subprocess

    from gymgate.envs import python as py

    first = py.discover(include_uv=False)
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(py.subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    assert py.discover(include_uv=False) == first
    assert calls == []  # nothing re-probed
    assert (cache / py.PROBE_CACHE).is_file()
