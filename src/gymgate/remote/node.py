"""What runs on a cluster node for one unit of work: the caller's checkout materialised once per node by its digest,
gymgate's own environment built there from the checkout's committed lock, one `gymgate` command (one ref, or one
shard of it) in its own session, its run folder read back as it is written, and a stop that leaves nothing of the
unit running.

Standard library and gymgate.processes only: this module runs on the cluster's Python, beside Ray, where gymgate is
not installed (the dispatcher ships the package). The caller packs its checkout with the same functions, so the
digest a node checks is computed one way."""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import io
import os
import select
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.processes import alive, kill_group, sweep

UNIT_MARKER = "GYMGATE_UNIT_ID"  # every process of a unit carries it: the unit's stop (and its reaper) sweep by it
COMPLETE = ".gymgate-complete"  # written last into a materialised checkout or a built environment
CHECKOUTS, HARNESSES, SOURCES = "checkouts", "harness", "sources"  # under the node's cache (sources: Gym trees)
# What a unit's command inherits of the node worker's environment: nothing of Ray's (a nested `ray.init` must not
# find the outer cluster, nor the cluster's token), nothing the cluster's operators set for their own jobs; where the
# node keeps caches, interpreters and configuration (XDG_*, PYENV_ROOT: uv's cache and interpreters, pyenv's).
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME", "SSL_CERT_FILE", "SSL_CERT_DIR")
INHERITED += ("PYENV_ROOT", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")
INHERITED_PREFIXES = ("UV_", "GYMGATE_", "LC_")
LOCK_WAIT_S = 1800.0  # a neighbour unit building the same checkout or environment: as long as a cold build takes
BUILD_TIMEOUT_S = 1800.0  # `uv sync` of gymgate's own environment on a cold node (downloads included)


class Refused(Exception):
    """The node will not run this unit: its inputs are not what the caller sent (a digest differs), or the node
    lacks what a unit needs (uv). Never a verdict: the caller reports the unit unjudged."""


def digest_of(entries: Iterable[tuple[str, bytes]]) -> str:
    """One digest for a set of files: each relative path and its content's SHA256, in path order."""
    digest = hashlib.sha256()
    for name, data in sorted(entries):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def pack(root: Path, names: Iterable[str]) -> tuple[str, bytes]:
    """The files `names` (relative to `root`) as a reproducible tar.gz, and their digest: the same files give the
    same bytes on any machine (no times, owners or order of the file system in it)."""
    entries = [(name, (root / name).read_bytes(), os.access(root / name, os.X_OK)) for name in sorted(set(names))]
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as tar:
        for name, data, executable in entries:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if executable else 0o644
            tar.addfile(info, io.BytesIO(data))
    return digest_of((name, data) for name, data, _ in entries), buffer.getvalue()


def unpack(blob: bytes, into: Path) -> list[tuple[str, bytes]]:
    """Extract a pack (regular files only, nothing outside `into`) and return what it held."""
    found = []
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member in tar.getmembers():
            target = (into / member.name).resolve()
            if not member.isfile() or not target.is_relative_to(into.resolve()):
                raise Refused(f"the pack holds {member.name!r}, which is not a file inside it")
            handle = tar.extractfile(member)
            data = handle.read() if handle else b""
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(member.mode & 0o755)
            found.append((member.name, data))
    return found


@contextlib.contextmanager
def held(lock: Path, timeout_s: float = LOCK_WAIT_S):
    """An exclusive lock on `lock` (a file), waited for at most `timeout_s`."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Refused(f"{lock}: another unit held it for over {timeout_s:g} s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def materialise(blob: bytes, digest: str, cache: Path, kind: str = CHECKOUTS) -> Path:
    """The checkout (or Gym source, `kind` SOURCES) with this digest under the node's cache, unpacked once per node
    (concurrent units wait for the first); a pack whose files do not have the digest the caller named is refused,
    never run."""
    home = cache / kind / digest
    if (home / COMPLETE).is_file():
        return home
    with held(cache / kind / f"{digest}.lock"):
        if (home / COMPLETE).is_file():
            return home
        scratch = cache / kind / f"{digest}.partial-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        found = digest_of(unpack(blob, scratch))
        if found != digest:
            shutil.rmtree(scratch, ignore_errors=True)
            raise Refused(f"the {kind} pack sent as {digest[:12]} unpacks to {found[:12]}: not run")
        shutil.rmtree(home, ignore_errors=True)
        scratch.rename(home)
        (home / COMPLETE).write_text(digest + "\n")
    return home


def harness(checkout: Path, cache: Path, timeout_s: float = BUILD_TIMEOUT_S) -> Path:
    """gymgate's own environment for this checkout, built on the node from its committed lock (`uv sync --locked`:
    a lock that does not match the project is refused), once per node; returns its `gymgate` command."""
    uv = shutil.which("uv")
    if uv is None:
        raise Refused("this node has no `uv` on PATH (a gymgate node needs it: pip install uv)")
    venv = cache / HARNESSES / checkout.name
    command = venv / "bin" / "gymgate"
    if (venv / COMPLETE).is_file():
        return command
    with held(cache / HARNESSES / f"{checkout.name}.lock"):
        if (venv / COMPLETE).is_file():
            return command
        env = {**allowed(os.environ), "UV_PROJECT_ENVIRONMENT": str(venv)}
        try:
            done = subprocess.run(
                [uv, "sync", "--locked", "--no-dev", "--project", str(checkout)],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise Refused(f"building gymgate's environment took over {timeout_s:g} s") from None
        if done.returncode != 0:
            raise Refused(f"uv sync --locked of the checkout failed: {(done.stderr or done.stdout)[-600:]}")
        (venv / COMPLETE).write_text(checkout.name + "\n")
    return command


def allowed(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the node worker's environment a unit's command may see (INHERITED)."""
    return {k: v for k, v in environ.items() if k in INHERITED or k.startswith(INHERITED_PREFIXES)}


@dataclass
class UnitProcess:
    """One unit's command on this node, in a session of its own, with every descendant carrying the unit's
    marker; its run folder is read back file by file as it is written."""

    unit_id: str
    run_dir: Path
    process: subprocess.Popen | None = None
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)

    def start(self, argv: list[str], environ: Mapping[str, str], cwd: Path, log: Path, watch: int | None = None) -> int:
        """Start the command; `watch`: the process whose death (the unit's actor killed, its worker gone) must stop
        the unit too — a reaper that is no one's child sweeps the unit's marker then."""
        env = {**allowed(environ), UNIT_MARKER: self.unit_id}
        log.parent.mkdir(parents=True, exist_ok=True)
        self.stopped_file.unlink(missing_ok=True)
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        if watch is not None:
            start_reaper(self.unit_id, watch, self.stopped_file, log)
        return self.process.pid

    @property
    def stopped_file(self) -> Path:
        """Written once the unit is stopped and swept: its reaper has nothing left to do and ends."""
        return self.run_dir.parent / f".{self.unit_id}.stopped"

    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def changed(self) -> dict[str, bytes]:
        """Every file of the run folder that is new or changed since the last call (symlinks, which point into
        the node, are left out), by its path in the folder."""
        found: dict[str, bytes] = {}
        if not self.run_dir.is_dir():
            return found
        for path in sorted(self.run_dir.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            name = path.relative_to(self.run_dir).as_posix()
            with contextlib.suppress(OSError):
                stat = path.stat()
                if self.seen.get(name) != (stat.st_size, stat.st_mtime_ns):
                    found[name] = path.read_bytes()
                    self.seen[name] = (stat.st_size, stat.st_mtime_ns)
        return found

    def stop(self, grace_s: float) -> list[int]:
        """SIGTERM to the command (gymgate's own stop path: its run is interrupted and swept), then after `grace_s`
        SIGKILL to its session, then a sweep of whatever still carries the unit's marker. Returns what the sweep
        had to stop."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                kill_group(self.process.pid)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=10)
        swept = sweep(self.unit_id, marker=UNIT_MARKER)
        self.stopped_file.parent.mkdir(parents=True, exist_ok=True)
        self.stopped_file.write_text("stopped\n")
        return swept


REAPER_LIFETIME_S = 24 * 3600.0  # the longest a unit may run before its reaper stops it anyway


def start_reaper(unit_id: str, watched: int, stopped: Path, log: Path) -> None:
    """`python -m gymgate.remote.node reap …` with this package on its path, detached twice: in a session of its own
    and no one's child (Ray kills a dead worker's children; the reaper must outlive the worker it watches)."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**allowed(os.environ), "PYTHONPATH": package_root}
    argv = [sys.executable, "-m", "gymgate.remote.node", "reap", unit_id, str(watched), str(stopped)]
    with log.open("ab") as out:
        subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, timeout=30)


def reap(unit_id: str, watched: int, stopped: Path, lifetime_s: float = REAPER_LIFETIME_S) -> list[int]:
    """Wait until `watched` is gone (pidfd: a reused PID cannot fool it) or `lifetime_s` passed, then stop every
    process carrying the unit's marker; end at once, sweeping nothing, when the unit was stopped (`stopped`)."""
    deadline = time.monotonic() + lifetime_s
    try:
        handle = os.pidfd_open(watched)
    except (AttributeError, OSError):
        handle = None  # already gone, or no pidfd on this kernel: fall back to /proc below
    while time.monotonic() < deadline:
        if stopped.exists():
            return []
        if handle is not None:
            if select.select([handle], [], [], 1.0)[0]:
                break
        elif not alive(watched):
            break
        else:
            time.sleep(1.0)
    return sweep(unit_id, marker=UNIT_MARKER)


if __name__ == "__main__" and sys.argv[1:2] == ["reap"]:
    if os.fork() == 0:  # the child carries on as the reaper, orphaned: the parent returns to its caller now
        reap(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
    os._exit(0)
