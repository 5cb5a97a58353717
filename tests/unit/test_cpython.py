"""CPython from source into gymgate's cache: the source is verified first, a build is found only once finished,
and the Debian archive is the machine's own (fault injection; the real build runs in `nox -s tests`)."""

from __future__ import annotations

import json

import pytest

from gymgate.envs import cpython, cpython_source
from gymgate.envs.python import probe
from gymgate.errors import UsageError


def test_the_declared_release_meets_the_newest_gyms():
    spec = cpython.release("3.13.15")
    assert len(spec.sha256) == 64 and spec.tarball.endswith(".orig.tar.xz")
    assert {"ssl", "sqlite3", "lzma", "ctypes"} <= set(spec.modules)
    with pytest.raises(UsageError, match="not '3.99.0'"):
        cpython.release("3.99.0")


def test_a_tarball_with_another_digest_is_refused_before_anything_runs(cache, tmp_path):
    tarball = tmp_path / "Python-3.13.15.tar.xz"
    tarball.write_bytes(b"not the source")
    with pytest.raises(UsageError, match="not the declared"):
        cpython.build("3.13.15", tarball)
    with pytest.raises(UsageError, match="no such source tarball"):
        cpython.verify(tmp_path / "absent.tar.xz", "0" * 64)
    assert cpython.verify(tarball, cpython.sha256_of(tarball)) == cpython.sha256_of(tarball)
    assert not cpython.prefix_of("3.13.15").exists()


def test_only_finished_builds_are_found(cache):
    unfinished = cpython.prefix_of("3.13.15") / "bin"
    unfinished.mkdir(parents=True)
    (unfinished / "python3").write_text("")
    assert cpython.installed() == []
    (unfinished.parent / cpython.MARK).write_text(json.dumps({"source": "x.tar.xz", "source_sha256": "ab" * 32}))
    assert cpython.installed() == [unfinished / "python3"]
    assert cpython.build_info(unfinished / "python3")["source_sha256"] == "ab" * 32


def test_a_gymgate_build_says_so_in_its_build_string(cache, tmp_path):
    import shutil
    import sys

    prefix = cpython.prefix_of("3.13.15")
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python3").symlink_to(shutil.which("python3") or sys.executable)
    (prefix / cpython.MARK).write_text(json.dumps({"source": "py.orig.tar.xz", "source_sha256": "cd" * 32}))
    found = probe(prefix / "bin" / "python3")
    assert found is not None
    assert found.build.endswith("built by gymgate from py.orig.tar.xz sha256:" + "cd" * 32)
    assert found.provenance()["build"] == found.build


def _stored(store, sha256):
    """A finished build in a shared store (its python3 the running interpreter, enough for the smoke test)."""
    import sys

    prefix = store / f"{cpython.PREFIX}3.13.15"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python3").symlink_to(sys.executable)
    (prefix / cpython.MARK).write_text(json.dumps({"source": "py.orig.tar.xz", "source_sha256": sha256}))
    return prefix


def test_a_stored_build_of_the_declared_source_is_copied_instead_of_compiled(cache, tmp_path, monkeypatch):
    spec = cpython.release("3.13.15")
    store = tmp_path / "store"
    _stored(store, spec.sha256)
    monkeypatch.setenv(cpython.BUILDS_VAR, str(store))
    monkeypatch.setattr(cpython_source, "fetch", lambda spec: pytest.fail("the source was fetched"))
    said: list[str] = []
    exe = cpython_source.provide_release(spec, log=said.append)
    assert exe == cpython.prefix_of("3.13.15") / "bin" / "python3" and cpython.installed() == [exe]
    mark = cpython.build_info(exe)
    assert mark["source_sha256"] == spec.sha256 and mark["copied_from"] == str(store / "cpython-3.13.15")
    assert said[0].startswith("copying CPython 3.13.15") and said[-1].startswith("copied CPython 3.13.15")
    assert cpython_source.provide_release(spec, log=said.append) == exe and len(said) == 2  # found: nothing again


def test_a_stored_build_of_another_source_is_not_used(cache, tmp_path, monkeypatch):
    spec = cpython.release("3.13.15")
    _stored(tmp_path / "store", "ef" * 32)
    monkeypatch.setenv(cpython.BUILDS_VAR, str(tmp_path / "store"))
    assert cpython.stored_build(spec) is None
    fetched = []

    def fetch(spec):
        fetched.append(spec.version)
        raise cpython.InfraError("apt-get source failed")

    monkeypatch.setattr(cpython_source, "fetch", fetch)
    with pytest.raises(cpython.InfraError, match="apt-get source failed"):
        cpython_source.provide_release(spec)
    assert fetched == ["3.13.15"] and cpython.installed() == []


def test_the_debian_archive_is_the_one_the_machine_already_uses(tmp_path):
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n"
    )
    assert cpython_source.mirror((tmp_path / "sources.list", parts)) == "http://mirror.example/debian"
    (parts / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://other.example/debian/ bookworm main\n")
    assert cpython_source.mirror((tmp_path / "sources.list", parts)) == "http://other.example/debian"
    (tmp_path / "sources.list").write_text("")
    with pytest.raises(Exception, match="pass it with --source"):
        cpython_source.mirror((tmp_path / "sources.list", parts))
