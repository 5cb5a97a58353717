"""CPython built from a source tarball into gymgate's cache, for machines where no interpreter meets a Gym's
Requires-Python and uv may not download one (the releases and their digests: cpython.toml).

A build is done once per version and cached under `<cache>/pythons/cpython-<version>/`; discovery
(envs/python.py) finds it there. The installed tree is staged with DESTDIR and moved into place only after its
standard library passed the smoke test, and its completion mark is written last: a half-built or failed build is
never found. Every step has a deadline; the source is verified against its declared SHA256 before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gymgate.errors import InfraError, UsageError
from gymgate.locations import cache_dir
from gymgate.locks import held
from gymgate.options import PYTHON_BUILDS

RELEASES_FILE = Path(__file__).with_name("cpython.toml")
MARK = "gymgate-python.json"  # inside an installed prefix, written last
PREFIX = "cpython-"
BUILD_LOCK_TIMEOUT_S = 3600  # another run building the same version
EXTRACT_TIMEOUT_S = 600
CONFIGURE_TIMEOUT_S = 900
MAKE_TIMEOUT_S = 3600  # ~6 min on two idle cores, ~10 min beside other work
INSTALL_TIMEOUT_S = 900
SMOKE_TIMEOUT_S = 60
COPY_TIMEOUT_S = 600
BUILD_DURATION = "about 2 min on two idle cores (104 s measured; longer beside other work)"
# CPython's own test suite (its C test modules, Lib/test and their bytecode) is neither built nor installed: Gym runs
# none of it; without it the build takes 151 s instead of 174 s and installs 252 MB instead of 405 MB.
# CPython's own optimisation flags without its default `-g` (configure adds -DNDEBUG): the same code, no debug
# information to generate (make: 74 s / 145 CPU-s against 97 / 188); no pip seeded into the interpreter (2.5 s): uv
# makes every environment. Whole build, two idle cores: 104 s against 130.
CONFIGURE_FLAGS = ("--disable-test-modules", "--without-ensurepip", "OPT=-O3 -Wall")
# A folder of finished builds shared between gymgate caches (another cache's `pythons/`, a CI cache): a build whose
# source digest is the declared one is copied from there instead of compiled again.
BUILDS_VAR = PYTHON_BUILDS.var  # declared with the other settings (gymgate.options)


@dataclass(frozen=True)
class Release:
    version: str
    tarball: str
    sha256: str
    debian_source: str
    debian_suite: str
    modules: dict[str, str]  # module -> the Debian -dev package that provides what it links against


def releases() -> list[Release]:
    data = tomllib.loads(RELEASES_FILE.read_text())
    return [Release(**r) for r in data.get("release", [])]


def release(version: str) -> Release:
    for item in releases():
        if item.version == version:
            return item
    known = ", ".join(r.version for r in releases())
    raise UsageError(f"gymgate knows how to build CPython {known}, not {version!r} (src/gymgate/envs/cpython.toml)")


def pythons_dir() -> Path:
    return cache_dir() / "pythons"


def prefix_of(version: str) -> Path:
    return pythons_dir() / f"{PREFIX}{version}"


def installed() -> list[Path]:
    """The interpreters gymgate built that finished (their mark is there), newest version last."""
    found = []
    for mark in sorted(pythons_dir().glob(f"{PREFIX}*/{MARK}")):
        exe = mark.parent / "bin" / "python3"
        if exe.is_file():
            found.append(exe)
    return found


def build_info(python: Path) -> dict:
    """What a gymgate-built interpreter's mark says of its build (source digest, configure flags), or {}."""
    for exe in (python, python.resolve()):
        try:
            return json.loads((exe.parent.parent / MARK).read_text())
        except (OSError, ValueError):
            continue
    return {}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(tarball: Path, expected: str) -> str:
    if not tarball.is_file():
        raise UsageError(f"no such source tarball: {tarball}")
    got = sha256_of(tarball)
    if got != expected.lower():
        raise UsageError(
            f"{tarball} has SHA256 {got}, not the declared {expected} (src/gymgate/envs/cpython.toml); "
            "if you trust this tarball, pass its digest with --sha256"
        )
    return got


def _step(argv: list[str], cwd: Path, timeout_s: float, log: Path, what: str, env: dict | None = None) -> None:
    """One build command, output appended to the build log, killed (its whole process group) at its deadline."""
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        child = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = child.wait(timeout=timeout_s)
        except BaseException as exc:
            os.killpg(child.pid, 9)
            child.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise InfraError(
                    f"building CPython: {what} did not finish within {timeout_s:.0f} s (log: {log})"
                ) from None
            raise
    if code != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise InfraError(f"building CPython: {what} failed (exit {code}); log: {log}\n" + "\n".join(tail))


def _extract(tarball: Path, into: Path, log: Path) -> Path:
    """The tarball's single top-level source directory, unpacked under `into`."""
    into.mkdir(parents=True)
    _step(["tar", "-xf", str(tarball), "-C", str(into)], into, EXTRACT_TIMEOUT_S, log, f"unpacking {tarball.name}")
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1 or not (tops[0] / "configure").is_file():
        raise InfraError(f"{tarball} is not a CPython source tarball (no single directory with a configure script)")
    return tops[0]


def smoke_test(python: Path, modules: dict[str, str]) -> None:
    """Every standard-library module Gym needs imports; a missing one names the -dev package to install."""
    missing = []
    for module, package in modules.items():
        result = subprocess.run(
            [str(python), "-c", f"import {module}"], capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S
        )
        if result.returncode != 0:
            missing.append(f"{module} (install {package}, then build again)")
    if missing:
        raise InfraError(f"the CPython built at {python} lacks: " + "; ".join(missing))


def build(version: str, tarball: Path, sha256: str | None = None, jobs: int | None = None, log=print) -> Path:
    """Build and install CPython `version` from `tarball` into the cache; returns its python3. A version already
    built is returned as it is (rebuild by deleting its folder)."""
    spec = release(version)
    prefix = prefix_of(version)
    pythons_dir().mkdir(parents=True, exist_ok=True)
    with held(pythons_dir() / f"{PREFIX}{version}.lock", BUILD_LOCK_TIMEOUT_S, f"building CPython {version}"):
        if (prefix / MARK).is_file():
            return prefix / "bin" / "python3"
        digest = verify(tarball, sha256 or spec.sha256)
        shutil.rmtree(prefix, ignore_errors=True)
        work = pythons_dir() / f".build-{version}-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        build_log = pythons_dir() / f"{PREFIX}{version}.build.log"
        build_log.write_text("")
        started = time.monotonic()
        try:
            log(f"building CPython {version} from {tarball.name} (sha256:{digest[:12]}); log: {build_log}")
            source = _extract(tarball, work / "src", build_log)
            configure = [f"--prefix={prefix}", *CONFIGURE_FLAGS]
            env = dict(os.environ, LC_ALL="C")
            _step(["./configure", *configure], source, CONFIGURE_TIMEOUT_S, build_log, "configure", env)
            n = jobs or os.cpu_count() or 1
            _step(["make", f"-j{n}"], source, MAKE_TIMEOUT_S, build_log, "make", env)
            staged = work / "stage"
            _step(["make", "install", f"DESTDIR={staged}"], source, INSTALL_TIMEOUT_S, build_log, "make install", env)
            tree = staged / prefix.relative_to(prefix.anchor)
            smoke_test(tree / "bin" / "python3", spec.modules)  # runs from the staged tree: CPython finds its prefix
            os.replace(tree, prefix)
            mark = {
                "version": version,
                "source": tarball.name,
                "source_sha256": digest,
                "configure": configure,
                "built_at": time.time(),
                "seconds": round(time.monotonic() - started, 1),
            }
            _mark(prefix, mark)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log(f"built CPython {version} in {time.monotonic() - started:.0f} s: {prefix / 'bin' / 'python3'}")
        return prefix / "bin" / "python3"


def _mark(prefix: Path, mark: dict) -> None:
    """The completion mark, written last and atomically: only a finished interpreter is ever found."""
    (prefix / (MARK + ".tmp")).write_text(json.dumps(mark, indent=2))
    os.replace(prefix / (MARK + ".tmp"), prefix / MARK)


def stored_build(spec: Release) -> Path | None:
    """A finished build of `spec` in $GYMGATE_PYTHON_BUILDS made from the declared source, or None."""
    store = PYTHON_BUILDS.value()
    if not store:
        return None
    prefix = Path(store).expanduser() / f"{PREFIX}{spec.version}"
    info = build_info(prefix / "bin" / "python3")
    if info.get("source_sha256") == spec.sha256 and (prefix / "bin" / "python3").is_file():
        return prefix
    return None


def copy_build(spec: Release, shared: Path, log=print) -> Path:
    """Copy a stored build into the cache: staged, smoke-tested where it will live, its mark written last."""
    prefix = prefix_of(spec.version)
    pythons_dir().mkdir(parents=True, exist_ok=True)
    with held(pythons_dir() / f"{PREFIX}{spec.version}.lock", BUILD_LOCK_TIMEOUT_S, f"copying CPython {spec.version}"):
        if (prefix / MARK).is_file():
            return prefix / "bin" / "python3"
        started = time.monotonic()
        log(f"copying CPython {spec.version} built from sha256:{spec.sha256[:12]} from {shared} ({BUILDS_VAR})")
        staged = pythons_dir() / f".copy-{spec.version}-{os.getpid()}"
        shutil.rmtree(staged, ignore_errors=True)
        log_file = pythons_dir() / f"{PREFIX}{spec.version}.build.log"
        try:
            _step(["cp", "-a", str(shared), str(staged)], pythons_dir(), COPY_TIMEOUT_S, log_file, "copying a build")
            (staged / MARK).unlink()
            smoke_test(staged / "bin" / "python3", spec.modules)
            shutil.rmtree(prefix, ignore_errors=True)
            os.replace(staged, prefix)
            _mark(
                prefix, build_info(shared / "bin" / "python3") | {"copied_from": str(shared), "copied_at": time.time()}
            )
        finally:
            shutil.rmtree(staged, ignore_errors=True)
        log(f"copied CPython {spec.version} in {time.monotonic() - started:.0f} s: {prefix / 'bin' / 'python3'}")
        return prefix / "bin" / "python3"
