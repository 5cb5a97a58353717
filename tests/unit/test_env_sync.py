"""Content-addressed environments: keys follow inputs, builds happen once, half-builds never survive."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gymgate.envs import sync
from gymgate.envs.project import uv_env
from gymgate.envs.python import Interpreter
from gymgate.errors import InfraError, StaleLockError
from gymgate.refs.source import KIND_TREE, GymSource

INTERP = Interpreter(Path(sys.executable), ".".join(map(str, sys.version_info[:3])), "CPython")


def _source(digest: str = "d" * 64) -> GymSource:
    return GymSource(name="t", kind=KIND_TREE, version="0.4.0", requires_python=">=3.11", digest=digest, origin="x")


def _project(tmp_path: Path, lock_text: str = "version = 1\n") -> Path:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (project / "uv.lock").write_text(lock_text)
    return project


def test_key_changes_with_every_input(tmp_path):
    project = _project(tmp_path)
    base = sync.env_key(project, _source(), INTERP)
    assert sync.env_key(project, _source(), INTERP) == base
    assert sync.env_key(project, _source("e" * 64), INTERP) != base
    other_python = Interpreter(INTERP.path, "3.99.0", "CPython")
    assert sync.env_key(project, _source(), other_python) != base
    (project / "uv.lock").write_text("version = 1\n# changed\n")
    assert sync.env_key(project, _source(), INTERP) != base


@pytest.fixture
def fake_lock(monkeypatch):
    """These tests use a placeholder uv.lock: skip uv's own check of it (tested with real uv below)."""
    monkeypatch.setattr(sync, "check_lock", lambda *args: None)


def test_concurrent_callers_build_once_and_later_calls_install_nothing(tmp_path, cache, monkeypatch, fake_lock):
    project = _project(tmp_path)
    calls = []

    def fake_sync(project, path, interp, source):
        calls.append(path)
        path.mkdir(parents=True)
        time.sleep(0.3)  # long enough for the other thread to be waiting on the lock
        (path / "bin").mkdir()

    monkeypatch.setattr(sync, "_sync", fake_sync)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(sync.ensure_env(project, _source(), INTERP))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert sorted(r.built for r in results) == [False, False, True]
    assert len({r.path for r in results}) == 1
    assert sync.ensure_env(project, _source(), INTERP).built is False
    assert len(calls) == 1


def test_half_built_environment_is_rebuilt_from_scratch(tmp_path, cache, monkeypatch, fake_lock):
    project = _project(tmp_path)
    key = sync.env_key(project, _source(), INTERP)
    half = cache / "envs" / key
    half.mkdir(parents=True)
    (half / "leftover").write_text("from a killed build")
    seen = []

    def fake_sync(project, path, interp, source):
        seen.append(sorted(p.name for p in path.parent.joinpath(key).glob("*")) if path.exists() else [])
        path.mkdir(parents=True)

    monkeypatch.setattr(sync, "_sync", fake_sync)
    env = sync.ensure_env(project, _source(), INTERP)
    assert env.built and seen == [[]]
    assert not (half / "leftover").exists()
    assert (half / sync.MARK).is_file()


def test_failed_sync_leaves_no_directory_and_no_mark(tmp_path, cache, monkeypatch, fake_lock):
    project = _project(tmp_path)

    def failing_sync(project, path, interp, source):
        path.mkdir(parents=True)
        raise InfraError("uv sync failed: boom")

    monkeypatch.setattr(sync, "_sync", failing_sync)
    with pytest.raises(InfraError, match="boom"):
        sync.ensure_env(project, _source(), INTERP)
    key = sync.env_key(project, _source(), INTERP)
    assert not (cache / "envs" / key / sync.MARK).exists()


def test_stale_lock_fails_loudly_with_the_fixing_command(tmp_path, cache):
    """Real uv: a lock that no longer matches its pyproject.toml is refused by `uv sync --locked`."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = []\n[tool.uv]\npackage = false\n'
    )
    subprocess.run(
        ["uv", "lock", "--project", str(project), "--python", sys.executable, "--offline"],
        check=True,
        capture_output=True,
        env=uv_env(),
    )
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = ["packaging"]\n'
        "[tool.uv]\npackage = false\n"
    )
    source = _source()
    with pytest.raises(StaleLockError) as info:
        sync.ensure_env(project, source, INTERP)
    assert "is stale for its pyproject.toml" in str(info.value)
    assert "delete it and run again" in str(info.value)
    assert not any((cache / "envs").glob("*/" + sync.MARK))


def test_stale_lock_is_caught_even_when_the_environment_is_cached(tmp_path, cache, monkeypatch):
    project = tmp_path / "proj"
    project.mkdir()
    text = '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = []\n[tool.uv]\npackage = false\n'
    (project / "pyproject.toml").write_text(text)
    subprocess.run(
        ["uv", "lock", "--project", str(project), "--python", sys.executable, "--offline"],
        check=True,
        capture_output=True,
        env=uv_env(),
    )
    monkeypatch.setattr(sync, "_sync", lambda project, path, interp, source: path.mkdir(parents=True))
    assert sync.ensure_env(project, _source(), INTERP).built
    assert not sync.ensure_env(project, _source(), INTERP).built  # cached and fresh: reused
    # The project changes (say, gymgate gains a dependency) while the lock and the cached env stay put.
    (project / "pyproject.toml").write_text(text.replace("dependencies = []", 'dependencies = ["packaging"]'))
    (project / "pyproject.toml").touch()
    with pytest.raises(StaleLockError, match="is stale"):
        sync.ensure_env(project, _source(), INTERP)
