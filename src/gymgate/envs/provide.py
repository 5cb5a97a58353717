"""`gymgate python list | build | ensure`, and what `ensure` does: an interpreter meeting a requirement, one the
machine has, or a declared release provided in gymgate's cache (envs/cpython_source.provide_release)."""

from __future__ import annotations

import sys
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gymgate.envs import cpython
from gymgate.envs.cpython_source import fetch, provide_release
from gymgate.envs.python import discover
from gymgate.errors import EXIT_OK, UsageError


def provide(requires_python: str, version: str | None = None, source: Path | None = None, log=print) -> Path:
    """An interpreter meeting `requires_python`: one the machine already has, else a gymgate build of the newest
    declared release that meets it (its source fetched from Debian's archive unless `source` is given)."""
    spec = SpecifierSet(requires_python)
    have = [i for i in discover(include_uv=False) if Version(i.version) in spec]
    if have and version is None:
        log(f"CPython {have[0].version} meets {requires_python}: {have[0].path}")
        return have[0].path
    fitting = [
        r for r in cpython.releases() if Version(r.version) in spec and (version is None or r.version == version)
    ]
    if not fitting:
        raise UsageError(f"no CPython release declared in {cpython.RELEASES_FILE.name} meets {requires_python}")
    return provide_release(max(fitting, key=lambda r: Version(r.version)), source, log)


def python_command(
    python_command: str,
    version: str | None = None,
    source: Path | None = None,
    sha256: str | None = None,
    requires_python: str | None = None,
) -> int:
    """`gymgate python list | build | ensure`."""
    if python_command == "list":
        for interp in discover():
            print(f"{interp.version:<10} {interp.path}  {interp.build.splitlines()[0] if interp.build else ''}")
        return EXIT_OK
    if python_command == "build":
        spec = cpython.release(version)
        tarball = source.resolve() if source else fetch(spec)
        print(cpython.build(spec.version, tarball, sha256=sha256))
        return EXIT_OK
    print(provide(requires_python, log=lambda line: print(line, file=sys.stderr)))
    return EXIT_OK
