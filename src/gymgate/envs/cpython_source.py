"""A CPython source tarball from Debian's archive, fetched with apt-get through a private sources list.

Machines of this kind reach Debian's package archive and PyPI but not python.org: Debian's source package carries
the upstream tarball byte for byte. The machine's own apt configuration is left alone: gymgate writes its own
sources list (a deb-src line for the release's suite on the mirror the machine already uses), its own package
lists and its own cache under `<cache>/pythons/apt/`, and verifies the tarball against cpython.toml's digest.
`provide_release` puts a declared release in gymgate's cache: found there, copied from a shared store of builds, or
built from that tarball.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from gymgate.envs.cpython import MARK, Release, build, copy_build, prefix_of, pythons_dir, stored_build, verify
from gymgate.errors import InfraError

APT_TIMEOUT_S = 600
SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


def mirror(sources: tuple[Path, ...] = SOURCES) -> str:
    """The Debian archive this machine's apt already uses (its first `deb` URI that is not a security mirror)."""
    files: list[Path] = []
    for where in sources:
        if where.is_dir():
            files += sorted(p for p in where.iterdir() if p.suffix in (".list", ".sources"))
        elif where.is_file():
            files.append(where)
    for path in files:
        text = path.read_text(errors="replace")
        uris = re.findall(r"^URIs:\s*(\S+)", text, re.M) + re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)
        for uri in uris:
            if "security" not in uri and uri.rstrip("/").endswith("/debian"):
                return uri.rstrip("/")
    raise InfraError(
        "no Debian archive is configured in /etc/apt (looked for a deb URI ending in /debian): fetch the CPython "
        "source tarball yourself and pass it with --source"
    )


def _apt(args: list[str], work: Path, apt_root: Path, what: str) -> None:
    options = [
        f"-o=Dir::Etc::sourcelist={apt_root / 'sources.list'}",
        "-o=Dir::Etc::sourceparts=-",
        f"-o=Dir::State::Lists={apt_root / 'lists'}",
        f"-o=Dir::Cache={apt_root / 'cache'}",
        "-o=APT::Get::List-Cleanup=0",
        "-o=Debug::NoLocking=1",  # its own lists and cache: no lock shared with the machine's apt is needed
        "-q",
    ]
    try:
        result = subprocess.run(
            ["apt-get", *options, *args], cwd=work, capture_output=True, text=True, timeout=APT_TIMEOUT_S
        )
    except FileNotFoundError:
        raise InfraError("apt-get is not on this machine: pass the CPython source tarball with --source") from None
    except subprocess.TimeoutExpired:
        raise InfraError(f"apt-get {what} did not finish within {APT_TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise InfraError(f"apt-get {what} failed (exit {result.returncode}):\n{result.stderr.strip()[-1500:]}")


def fetch(spec: Release) -> Path:
    """The release's verified source tarball, fetched once into `<cache>/pythons/sources/`."""
    sources = pythons_dir() / "sources"
    target = sources / spec.tarball
    if target.is_file():
        verify(target, spec.sha256)
        return target
    apt_root = pythons_dir() / "apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt_root / sub).mkdir(parents=True, exist_ok=True)
    (apt_root / "sources.list").write_text(f"deb-src {mirror()} {spec.debian_suite} main\n")
    work = pythons_dir() / "apt" / "download"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _apt(["update"], work, apt_root, f"update (the {spec.debian_suite} source index)")
    _apt(["source", "--download-only", spec.debian_source], work, apt_root, f"source {spec.debian_source}")
    fetched = work / spec.tarball
    if not fetched.is_file():
        raise InfraError(f"apt-get source {spec.debian_source} did not bring {spec.tarball}")
    verify(fetched, spec.sha256)
    sources.mkdir(parents=True, exist_ok=True)
    fetched.replace(target)
    shutil.rmtree(work, ignore_errors=True)
    return target


def provide_release(spec: Release, source: Path | None = None, log=print) -> Path:
    """The declared release in gymgate's cache: already there, copied from a shared store of builds
    ($GYMGATE_PYTHON_BUILDS) when one there was built from the declared source, else built from `source` or from
    Debian's copy of it."""
    if (prefix_of(spec.version) / MARK).is_file():
        return prefix_of(spec.version) / "bin" / "python3"
    shared = stored_build(spec)
    if shared is not None and source is None:
        return copy_build(spec, shared, log)
    return build(spec.version, source or fetch(spec), log=log)
