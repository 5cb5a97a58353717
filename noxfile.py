# /// script
# dependencies = ["nox>=2025.5.1"]
# ///
"""gymgate's sessions. The harness runs in a uv-synced venv from the top-level uv.lock; each Gym ref gets
its own content-addressed environment outside nox (see src/gymgate/envs/)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox

nox.needs_version = ">=2025.5.1"
nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.sessions = ["tests"]

# Pins whose real Gym services the test suite starts: the newest release (where the acceptance paths and the
# in-environment tests run too), the last one before the Python 3.13.14 floor, and the oldest with a working CLI.
SERVICE_TEST_PINS = ("0.7.0", "0.4.0", "0.2.1")
ACCEPTANCE_TEST_PIN = "0.7.0"


def _harness(session: nox.Session) -> None:
    """Install the harness exactly as locked (fails loudly if uv.lock is stale)."""
    session.run_install(
        "uv",
        "sync",
        "--locked",
        "--group",
        "dev",
        f"--python={session.virtualenv.location}",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        silent=True,
    )


# How long nox waits, after Ctrl-C or a CI cancel, for gymgate to stop everything its run started (gymgate gives
# its in-environment session 60 s, then kills and sweeps by PID); only then would nox terminate it.
GYMGATE_STOP_S = 150.0


def _forward_sigterm() -> None:
    """A CI cancel sends SIGTERM to nox alone: pass it on to the gymgate process (which stops its run as on
    Ctrl-C) and let nox wait for it, instead of dying and leaving the run orphaned."""

    def handler(signum, frame):
        for task in Path("/proc/self/task").iterdir():
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGTERM)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


# gymgate's exit codes (src/gymgate/errors.py EXIT_CODES; tests/unit/test_noxfile.py holds the two equal): nox
# must not turn any of them into its own failure, so the session can end with the code itself.
GYMGATE_EXIT_CODES = (0, 1, 2, 3, 4, 130)
EXIT_UNJUDGED = 3


def _gymgate(session: nox.Session, *args: str, judged_later: bool = False) -> None:
    """Run the gymgate CLI through nox's own runner and leave nox with the CLI's own exit code (0 clean,
    1 regression, others: nothing judged), which gymgate also writes to a file because nox keeps only pass/fail.
    `judged_later`: a step of a longer run whose verdict a later session gives (one pin of the matrix): its
    failures (1) are data for that verdict and nox goes on to the next session; any other code still stops
    everything."""
    _forward_sigterm()
    with tempfile.TemporaryDirectory(prefix="gymgate-nox-") as scratch:
        exit_file = Path(scratch) / "exit-code"
        session.run(
            "gymgate",
            *args,
            env={"GYMGATE_EXIT_FILE": str(exit_file)},
            success_codes=list(GYMGATE_EXIT_CODES),
            # gymgate's stderr stays stderr (nox would merge it into stdout): `--json > verdict.json` is JSON alone.
            stderr=sys.stderr,
            interrupt_timeout=GYMGATE_STOP_S,
            terminate_timeout=15.0,
        )
        code = int(exit_file.read_text()) if exit_file.is_file() else EXIT_UNJUDGED
    if code == 1 and judged_later:
        session.log("gymgate exited 1: paths failed on this ref; the report over every ref judges them")
    elif code:
        session.log(f"gymgate exited {code}")
        sys.exit(code)


# How long the in-environment tests may take beside the default set's paths (alone: 1-2 min).
BESIDE_TIMEOUT_S = 1200.0


@contextlib.contextmanager
def _beside(session: nox.Session, title: str, command: list[str]):
    """Run `command` in the background while the block runs: the in-environment tests wait on timeouts and sleeps
    much of their time, which the default set's paths use (measured: 100 s for the three, against ~150 s one after
    another). Its output is shown whole once it ends. It runs in a process group of its own: if it fails, outlives
    BESIDE_TIMEOUT_S, or the block stops (an error, Ctrl-C, a CI cancel), the group is interrupted, then killed,
    and the session fails."""
    env = {
        **os.environ,
        **{k: v for k, v in session.env.items() if v is not None},
        "VIRTUAL_ENV": session.virtualenv.location,
        "PATH": os.pathsep.join([*(session.bin_paths or []), os.environ.get("PATH", "")]),
    }
    with tempfile.TemporaryFile("w+") as out:
        session.log(f"{title}: started, beside what follows: {' '.join(command)}")
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            yield
            code = proc.wait(timeout=BESIDE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        except BaseException:
            _stop_group(proc)
            raise
        finally:
            if proc.poll() is None:
                _stop_group(proc)
            out.seek(0)
            session.log(f"{title}: output")
            sys.stdout.write(out.read())
            sys.stdout.flush()
    if code is None:
        session.error(f"{title}: still running after {BESIDE_TIMEOUT_S:.0f} s; stopped")
    if code:
        session.error(f"{title}: failed (exit {code})")


def _stop_group(proc: subprocess.Popen, grace_s: float = 60.0) -> None:
    """Interrupt a background command's process group (its fixtures stop what they started), kill it after
    `grace_s`."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)
            return


@nox.session(default=False)
def accept(session: nox.Session) -> None:
    """Run one Gym ref through the acceptance matrix: nox -s accept -- --gym-ref 0.4.0"""
    _harness(session)
    _gymgate(session, "accept", *session.posargs)


@nox.session(default=False)
def load(session: nox.Session) -> None:
    """A bump under RL's load as well (gymgate/load/sweep.toml): nox -s load -- --gym-ref 0.7.0 --baseline 0.6.0

    The acceptance comparison, then both refs' replayable paths rolled out concurrently in GRPO groups, interleaved;
    the same ref on both sides measures the noise (A/A)."""
    _harness(session)
    _gymgate(session, "accept", "--load", *session.posargs)


@nox.session(name="accept-all", default=False)
def accept_all(session: nox.Session) -> None:
    """Every environment of a Gym ref that runs here, in waves: nox -s accept-all -- --gym-ref 0.7.0 --no-baseline

    Each environment's case, or the config Gym declares for it, and every recorded rollout it ships; the
    environments that cannot run here are listed with why."""
    _harness(session)
    _gymgate(session, "accept", "--env-set", "all", *session.posargs)


def _pins() -> list[str]:
    """The committed pins, oldest first (pins/*.toml; the version order gymgate uses too)."""

    def key(name: str) -> list[int | str]:
        return [int(part) if part.isdigit() else part for part in name.split(".")]

    return sorted((p.stem for p in Path("pins").glob("*.toml") if p.name != "defaults.toml"), key=key)


MATRIX_ALL = "all"  # the matrix session that writes the report over every ref (served from the cache)
# When this nox invocation began: the matrix sessions pass it (`--reuse-since`), so the report over every ref is served
# the runs the per-pin sessions of the same invocation made — red ones too, which the cache alone never serves.
INVOCATION_STARTED = f"{time.time():.3f}"


@nox.session(default=False)
@nox.parametrize("pin", [*_pins(), MATRIX_ALL])
def matrix(session: nox.Session, pin: str) -> None:
    """The pin matrix. `nox -s matrix` runs each pin in its own session, then the report over all of them (from the
    cache); `nox -s "matrix(pin='0.3.0')"` runs one pin; `nox -s matrix -- 0.3.0 main --gym-repo ../Gym` runs the
    refs listed, in that order (options after -- go to `gymgate matrix`)."""
    if pin != MATRIX_ALL and _on_a_cluster(session.posargs):
        session.skip(f"on a Ray cluster, matrix(pin='{MATRIX_ALL}') sends every pin at once")
    _harness(session)
    ours = ("--reuse-since", INVOCATION_STARTED)
    if pin == MATRIX_ALL:
        _gymgate(session, "matrix", *ours, *session.posargs)
    else:
        _gymgate(session, "matrix", "--only", pin, *ours, *session.posargs, judged_later=True)


def _on_a_cluster(posargs: list[str]) -> bool:
    """--ray-address (or GYMGATE_RAY_ADDRESS) given: the runs go to a Ray cluster, all of a command's at once."""
    given = any(arg == "--ray-address" or arg.startswith("--ray-address=") for arg in posargs)
    return given or bool(os.environ.get("GYMGATE_RAY_ADDRESS", "").strip())


@nox.session(default=False)
def case(session: nox.Session) -> None:
    """Draft a case for a Gym environment and run it: nox -s case -- new gpqa_diamond --gym-ref 0.4.0
    (`nox -s case -- list --gym-ref 0.4.0` lists the Gym's environments)."""
    _harness(session)
    if session.posargs[:1] == ["list"]:
        _gymgate(session, "cases", *session.posargs)
    else:
        _gymgate(session, "case", *session.posargs)


@nox.session(default=False)
def merge(session: nox.Session) -> None:
    """Combine shard runs (accept --shard K/N) into one run per ref, and judge the bump: nox -s merge -- runs/*/"""
    _harness(session)
    _gymgate(session, "merge", *session.posargs)


@nox.session(default=False)
def bisect(session: nox.Session) -> None:
    """Find the Gym commit that broke a path: nox -s bisect -- --good v0.4.0 --bad main --gym-repo ../Gym"""
    _harness(session)
    _gymgate(session, "bisect", *session.posargs)


@nox.session(default=False)
def compare(session: nox.Session) -> None:
    """Compare two stored runs without running anything: nox -s compare -- runs/<A> runs/<B>"""
    _harness(session)
    _gymgate(session, "compare", *session.posargs)


@nox.session(default=False)
def ack(session: nox.Session) -> None:
    """Draft acknowledgements of a bump's contract changes for review: nox -s ack -- runs/<candidate run>"""
    _harness(session)
    _gymgate(session, "ack", *session.posargs)


@nox.session(default=False)
def up(session: nox.Session) -> None:
    """Start every environment's Gym services of a ref, check them and stop them."""
    _harness(session)
    _gymgate(session, "up", *session.posargs)


@nox.session(default=False)
def python(session: nox.Session) -> None:
    """The CPythons gymgate runs Gyms on: nox -s python -- list | build 3.13.15 [--source TARBALL --sha256 DIGEST]
    | ensure '>=3.13.14'. `accept`, `matrix`, `bisect`, `up` and `case` provide a missing one themselves."""
    _harness(session)
    _gymgate(session, "python", *(session.posargs or ["list"]))


@nox.session(default=False)
def lock(session: nox.Session) -> None:
    """Regenerate envs/<pin>/ (all pins, or those named after --)."""
    _harness(session)
    _gymgate(session, "lock", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    _harness(session)
    session.run("ruff", "check", "src", "tests", "tools", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "tools", "noxfile.py")


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """The docs site: the reference regenerated from the code (docs/reference/), then built strictly into .site/ (a
    broken link fails). `nox -s docs -- serve` serves it while you write."""
    _harness(session)
    session.run("python", "-m", "gymgate.reference", "docs/reference")
    quiet = {"NO_MKDOCS_2_WARNING": "1"}
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:], env=quiet)  # 127.0.0.1:8000, or --dev-addr
    else:
        session.run("mkdocs", "build", "--strict", *session.posargs, env=quiet)


# What the test suite needs of the machine beyond nox and uv, provided by the test command itself (never only by
# .ci/run): Debian's Chromium for the report page test, and a CPython that the newest Gym releases accept.
NEWEST_GYM_PYTHON = ">=3.13.14"
APT_TIMEOUT_S = "900"


def _chromium(session: nox.Session) -> None:
    if shutil.which("chromium"):
        return
    if os.geteuid() != 0:
        session.error("the report page test needs Debian's chromium: `sudo apt-get install chromium`, then rerun")
    quiet = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("timeout", APT_TIMEOUT_S, "apt-get", "update", "-q", external=True, env=quiet, silent=True)
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    session.run("timeout", APT_TIMEOUT_S, *install, external=True, env=quiet, silent=True)


def _machine(session: nox.Session) -> None:
    _chromium(session)
    # Built once into gymgate's cache from Debian's source when the machine has none (~6-10 min), then found.
    session.run("gymgate", "python", "ensure", NEWEST_GYM_PYTHON)


@nox.session
def tests(session: nox.Session) -> None:
    """Lint; harness unit and integration tests (git SHA, parallel runs, baseline reuse, real bump verdicts, the
    Gym mutation suite on 0.4.0 and 0.7.0);
    inside 0.7.0: in-env unit tests, the default set's real paths and fault paths (with gymgate's negative
    self-tests), the ten paths of the `more` environments and the real-services tests; inside 0.4.0 and 0.2.1: the
    real-services tests."""
    _harness(session)
    _machine(session)
    session.run("ruff", "check", "src", "tests", "tools", "noxfile.py")
    home, token = _home_with_a_ray_token(session)
    # Two test files at a time (each integration test runs its own isolated Gyms, port bands and Ray cluster): the
    # mutation suite, which shares one baseline run within its file, runs beside the other integration tests.
    session.run(
        "pytest",
        "tests/unit",
        "tests/integration",
        "-q",
        "-n",
        "2",
        "--dist",
        "loadfile",
        "--no-loadscope-reorder",  # files in tests/conftest.py's order: the costliest first
        "--durations=60",
        *session.posargs,
    )
    for pin in SERVICE_TEST_PINS:
        python = subprocess.check_output(
            [os.path.join(session.bin, "python"), "-m", "gymgate.envs.locate", pin], text=True
        ).strip()
        in_env = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        if pin == ACCEPTANCE_TEST_PIN:
            with _beside(session, "in-environment tests", [*in_env, "tests/inenv"]):
                _gymgate(session, "accept", "--gym-ref", pin, "--selftest")  # the default set, fault, variant paths
                # The `more` environments' own paths: their fault paths are the default set's again (CI's time).
                _gymgate(session, "accept", "--gym-ref", pin, "--env-set", "more", "--no-baseline", "--faults", "none")
        session.run(*in_env, "tests/services", f"--gym-pin={pin}", external=True)
    _ray_home_untouched(session, home, token)


def _home_with_a_ray_token(session: nox.Session) -> tuple[Path, str]:
    """The suite runs with a HOME of its own that holds a Ray token (~/.ray/auth_token), as a machine where any Ray
    program ever ran does: nothing gymgate starts may depend on it, read it or write beside it (a run's own clusters,
    the test clusters, the in-environment ones). What the suite needs of the real home stays where it is: caches
    (gymgate's, uv's), uv's interpreters, pyenv, pip's, uv's and git's configuration."""
    real = Path.home()
    home = Path(session.virtualenv.location) / "home"  # not create_tmp(): it would move TMPDIR too
    shutil.rmtree(home, ignore_errors=True)
    (home / ".ray").mkdir(parents=True)
    token = secrets.token_hex(32)
    (home / ".ray" / "auth_token").write_text(token)
    (home / ".ray" / "auth_token").chmod(0o600)
    kept = {
        "XDG_CACHE_HOME": real / ".cache",
        "XDG_CONFIG_HOME": real / ".config",
        "XDG_DATA_HOME": real / ".local" / "share",
        "PYENV_ROOT": real / ".pyenv",
    }
    session.env.update({name: os.environ.get(name) or str(path) for name, path in kept.items()})
    if "GIT_CONFIG_GLOBAL" not in os.environ and (real / ".gitconfig").is_file():
        session.env["GIT_CONFIG_GLOBAL"] = str(real / ".gitconfig")
    session.env["HOME"] = str(home)
    return home, token


def _ray_home_untouched(session: nox.Session, home: Path, token: str) -> None:
    """The suite's ~/.ray holds its token, unchanged, and nothing else."""
    found = sorted(p.relative_to(home).as_posix() for p in (home / ".ray").rglob("*"))
    if found != [".ray/auth_token"] or (home / ".ray" / "auth_token").read_text() != token:
        session.error(f"the suite's ~/.ray changed: it holds {found} (only its unchanged auth_token was there)")


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Measure one bench (the package tools/bench; `nox -s bench -- --help` lists them, from its registry); writes
    docs/benchmarks/<what>-<pin>.json and docs/benchmarks.md. nox -s bench -- paths --pin 0.4.0"""
    _harness(session)
    session.run("python", "-m", "tools.bench", *(session.posargs or ["paths"]))  # from the repository's root
