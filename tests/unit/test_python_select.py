"""Interpreter choice: the oldest that satisfies requires-python, or an error naming both sides."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gymgate.envs.python import Interpreter, discover, select
from gymgate.errors import InfraError

FOUND = [
    Interpreter(Path("/p/3.11.7/bin/python3"), "3.11.7", "CPython"),
    Interpreter(Path("/p/3.12.1/bin/python3"), "3.12.1", "CPython"),
    Interpreter(Path("/p/3.13.0/bin/python3"), "3.13.0", "CPython"),
]


def test_lowest_satisfying_interpreter_is_chosen():
    assert select(">=3.12", "gym", FOUND).version == "3.12.1"
    assert select(">=3.13", "gym", FOUND).version == "3.13.0"
    assert select("", "gym", FOUND).version == "3.11.7"


def test_unsatisfiable_requirement_names_required_and_found():
    with pytest.raises(InfraError) as info:
        select(">=3.13.14", "nemo-gym 0.5.0", FOUND)
    message = str(info.value)
    assert "nemo-gym 0.5.0 requires Python >=3.13.14" in message
    assert "3.11.7 (/p/3.11.7/bin/python3), 3.12.1 (/p/3.12.1/bin/python3), 3.13.0" in message
    assert "never lets uv download" in message
    assert info.value.exit_code == 2


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
    assert (cache / "interpreters.json").is_file()
