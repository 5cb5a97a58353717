"""A cluster node's side of a unit (gymgate/remote/node.py), with real files and real processes and no Ray: the
checkout travels by digest and a pack that does not match is refused; concurrent units unpack it once; a unit's
command sees none of the node worker's Ray environment; its run folder comes back as it is written; its stop
leaves nothing carrying its marker."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gymgate.processes import alive, marked_pids
from gymgate.remote import node

ROOT = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> list[str]:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("print('a')\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    return ["pkg/a.py", "run.sh"]


def test_a_pack_is_the_same_bytes_for_the_same_files(tmp_path):
    names = _tree(tmp_path / "one")
    _tree(tmp_path / "two")
    os.utime(tmp_path / "two" / "run.sh", (1, 1))  # times are not part of it
    assert node.pack(tmp_path / "one", names) == node.pack(tmp_path / "two", reversed(names))
    (tmp_path / "two" / "pkg" / "a.py").write_text("print('b')\n")
    assert node.pack(tmp_path / "two", names)[0] != node.pack(tmp_path / "one", names)[0]


def test_a_checkout_is_materialised_once_and_a_wrong_digest_is_refused(tmp_path):
    digest, blob = node.pack(tmp_path / "src", _tree(tmp_path / "src"))
    cache = tmp_path / "cache"
    homes = []
    threads = [threading.Thread(target=lambda: homes.append(node.materialise(blob, digest, cache))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(set(homes)) == 1 and len(homes) == 4
    home = homes[0]
    assert (home / "pkg" / "a.py").read_text() == "print('a')\n" and os.access(home / "run.sh", os.X_OK)
    assert (home / node.COMPLETE).read_text().strip() == digest
    with pytest.raises(node.Refused, match="unpacks to"):
        node.materialise(blob, "0" * 64, cache)
    assert not (cache / node.CHECKOUTS / ("0" * 64)).exists()


def test_a_pack_that_reaches_outside_its_folder_is_refused(tmp_path):
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(node.Refused, match="not a file inside it"):
        node.unpack(buffer.getvalue(), tmp_path / "into")
    assert not (tmp_path / "escaped").exists()


def test_a_units_command_sees_none_of_the_workers_ray_environment():
    worker = {
        "PATH": "/bin",
        "HOME": "/h",
        "RAY_ADDRESS": "10.0.0.1:6379",
        "OMP_NUM_THREADS": "1",
        "UV_CACHE_DIR": "/c",
        "PYENV_ROOT": "/p",
        "XDG_CACHE_HOME": "/x",
    }
    operators = {"RAY_JOB_CONFIG_JSON_ENV_VAR": "{}", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "t"}
    assert node.allowed(worker | {"GYMGATE_CACHE": "/g"} | operators) == {
        "PATH": "/bin",
        "HOME": "/h",
        "UV_CACHE_DIR": "/c",
        "PYENV_ROOT": "/p",
        "XDG_CACHE_HOME": "/x",
        "GYMGATE_CACHE": "/g",
    }


FAKE_HARNESS = """
import os, subprocess, sys, time
from pathlib import Path
run = Path(sys.argv[1])
(run / "paths").mkdir(parents=True)
(run / "run.json").write_text('{"started": 1}')
(run / "venvs").mkdir()
os.symlink("/usr/bin", run / "venvs" / "pin")
# a grandchild in a session of its own, as Gym servers are: only the marker finds it
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
(run / "paths" / "mcqa-accepted.json").write_text('{"outcome": "PASS"}')
print("ray seen:", os.environ.get("RAY_ADDRESS", "none"), flush=True)
time.sleep(float(sys.argv[2]))
(run / "paths" / "mcqa-rejected.json").write_text('{"outcome": "PASS"}')
"""


def _started(tmp_path: Path, unit_id: str, linger: float) -> node.UnitProcess:
    script = tmp_path / "harness.py"
    script.write_text(FAKE_HARNESS)
    unit = node.UnitProcess(unit_id, tmp_path / "run")
    environ = {**os.environ, "RAY_ADDRESS": "10.0.0.1:6379"}
    unit.start([sys.executable, str(script), str(unit.run_dir), str(linger)], environ, tmp_path, tmp_path / "unit.log")
    return unit


def _wait(predicate, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_units_run_folder_comes_back_as_it_is_written(tmp_path):
    unit = _started(tmp_path, "u-stream", linger=0.5)
    try:
        _wait(lambda: (unit.run_dir / "paths" / "mcqa-accepted.json").exists())
        first = unit.changed()
        assert "paths/mcqa-accepted.json" in first and not any(n.startswith("venvs") for n in first)
        _wait(lambda: unit.returncode() is not None)
        again = unit.changed()
        assert set(again) == {"paths/mcqa-rejected.json"}  # only what is new since the last read
        assert unit.returncode() == 0 and "ray seen: none" in (tmp_path / "unit.log").read_text()
    finally:
        unit.stop(grace_s=5)


def test_stopping_a_unit_leaves_nothing_with_its_marker(tmp_path):
    unit = _started(tmp_path, "u-stop", linger=300)
    _wait(lambda: len(marked_pids("u-stop", node.UNIT_MARKER)) >= 2)
    pids = marked_pids("u-stop", node.UNIT_MARKER)
    started = time.monotonic()
    unit.stop(grace_s=5)
    assert time.monotonic() - started < 30
    assert marked_pids("u-stop", node.UNIT_MARKER) == [] and not any(alive(p) for p in pids)


def test_the_node_module_needs_nothing_beyond_the_standard_library():
    """It runs on the cluster's Python, where only Ray is installed: importing it without site-packages works."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import gymgate.remote.node"
    done = subprocess.run([sys.executable, "-S", "-c", code, str(ROOT / "src")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_caller_ships_what_git_sees_and_writes_back_only_inside_the_run_folder(tmp_path):
    from gymgate.remote import transfer

    repo = tmp_path / "repo"
    names = _tree(repo)
    (repo / ".gitignore").write_text("ignored.txt\n")
    (repo / "ignored.txt").write_text("local only\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "pkg", ".gitignore"], check=True)
    (repo / "pkg" / "a.py").write_text("print('edited, not committed')\n")  # shipped as on disk
    assert transfer.checkout_files(repo) == sorted([".gitignore", *names])
    digest, blob = transfer.checkout_pack(repo)
    home = node.materialise(blob, digest, tmp_path / "cache")
    assert (home / "pkg" / "a.py").read_text() == "print('edited, not committed')\n"
    assert not (home / "ignored.txt").exists()
    into = tmp_path / "runs" / "r1"
    assert transfer.receive({"paths/mcqa-accepted.json": b"{}"}, into) == ["paths/mcqa-accepted.json"]
    with pytest.raises(node.Refused):
        transfer.receive({"../r2/run.json": b"{}"}, into)
    assert not (tmp_path / "runs" / "r2").exists()


def _reapers(unit_id: str) -> list[int]:
    """This unit's reaper processes (found by their command line, which names the unit)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if entry.name.isdigit() and b"reap" in argv and unit_id.encode() in argv and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("how", ["its actor dies", "it is stopped"])
def test_a_units_reaper_sweeps_it_when_its_actor_dies_and_ends_with_it(tmp_path, how):
    """The actor killed (here: a stand-in process, SIGKILLed) leaves the unit's command and its "Gym" behind: the
    reaper — no one's child, so nothing that kills the actor's children takes it — sweeps everything carrying the
    unit's marker, then ends; a unit stopped the normal way ends its reaper too."""
    unit_id = f"u-reaped-{how.split()[-1]}"
    actor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    script = tmp_path / "harness.py"
    script.write_text(FAKE_HARNESS)
    unit = node.UnitProcess(unit_id, tmp_path / "run")
    argv = [sys.executable, str(script), str(unit.run_dir), "300"]
    unit.start(argv, dict(os.environ), tmp_path, tmp_path / "unit.log", watch=actor.pid)
    try:
        _wait(lambda: len(marked_pids(unit_id, node.UNIT_MARKER)) >= 2 and _reapers(unit_id))
        if how == "its actor dies":
            actor.kill()
            actor.wait(timeout=10)
            _wait(lambda: marked_pids(unit_id, node.UNIT_MARKER) == [], timeout_s=30)
        else:
            unit.stop(grace_s=5)
        _wait(lambda: not _reapers(unit_id), timeout_s=10)
    finally:
        unit.stop(grace_s=5)
        actor.kill()
        actor.wait(timeout=10)
