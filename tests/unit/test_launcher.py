"""The forking launcher (services/launcher): a server forked from the pre-imported zygote is the process `python
app.py` would have been — working directory, argv, environment, sys.path, __file__, output, exit status, signals —
and without a zygote the client runs the real interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gymgate.processes import alive, wait_gone
from gymgate.services.launcher import client

CLIENT = client.__file__
REPORT = """import json, os, sys
print(json.dumps({"cwd": os.getcwd(), "argv": sys.argv, "path0": sys.path[0], "file": __file__,
                  "name": __name__, "var": os.environ.get("SERVER_VAR"), "pythonpath": sys.path[1]}))
sys.exit(int(sys.argv[1]))
"""
# Sleeps in short steps: a SIGINT that lands between the print and the sleep's system call runs Python's handler only
# at the next step (one long sleep would hold a KeyboardInterrupt for its whole length, under `python app.py` too).
SLEEPER = "import time\nprint('up', flush=True)\nfor _ in range(600):\n    time.sleep(0.1)\n"
GROUPED = "import os, time\nprint(os.getpid(), os.getpgrp(), flush=True)\ntime.sleep(60)\n"


@pytest.fixture
def zygote(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # gym-servers' own value: the test's clients are its servers
    path = str(tmp_path / "gym-servers")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gymgate.services.launcher.zygote", tmp_path, "gym-servers", "json", "no_such_module"],
        stderr=subprocess.PIPE,
        process_group=0,  # as the run's zygotes: a group of their own in the caller's session
    )
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        assert proc.poll() is None and time.monotonic() < deadline, "the zygote did not come up"
        time.sleep(0.05)
    yield path
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _server(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "server"
    folder.mkdir(exist_ok=True)
    (folder / "app.py").write_text(source)
    return folder


def _run(folder: Path, argv: list[str], env: dict[str, str], launched: bool) -> subprocess.CompletedProcess:
    command = [sys.executable, "-I", "-S", CLIENT, *argv] if launched else [sys.executable, *argv]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=60)


def _client(folder: Path, env: dict[str, str], **popen) -> subprocess.Popen:
    """`python app.py` as a Gym server venv runs it: the launcher client, in a process group of its own."""
    popen.setdefault("process_group", 0)
    command = [sys.executable, "-I", "-S", CLIENT, "app.py"]
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, text=True, **popen)


def test_a_forked_server_is_the_process_python_would_have_started(tmp_path, zygote):
    folder = _server(tmp_path, REPORT)
    env = dict(os.environ, SERVER_VAR="seven", PYTHONPATH=str(tmp_path / "extra"))
    direct = _run(folder, ["app.py", "3"], env, launched=False)
    launched = _run(folder, ["app.py", "3"], {**env, client.SOCKET_VARIABLE: zygote}, launched=True)
    assert direct.returncode == launched.returncode == 3
    assert launched.stdout == direct.stdout and '"var": "seven"' in launched.stdout
    assert '"name": "__main__"' in launched.stdout


def test_a_forked_servers_collections_never_scan_what_the_zygote_had_imported(tmp_path, zygote):
    """gc.freeze before each fork: the preloaded modules' objects are in no generation of the child's collector, so its
    collections neither spend CPU on them nor write to (and so copy) the pages they share with the zygote. The child
    collects as a fresh interpreter does, though the zygotes imported with the collector off."""
    folder = _server(tmp_path, "import gc\nprint(gc.get_freeze_count(), gc.isenabled(), gc.get_threshold())\n")
    direct = _run(folder, ["app.py"], dict(os.environ), launched=False).stdout.split(maxsplit=1)
    launched = _run(folder, ["app.py"], {**os.environ, client.SOCKET_VARIABLE: zygote}, launched=True).stdout.split(
        maxsplit=1
    )
    assert int(direct[0]) == 0  # a fresh interpreter freezes nothing
    assert int(launched[0]) > 10_000  # the zygote's own objects and json's, at least
    assert launched[1] == direct[1]  # collecting, with the same thresholds (the zygote imported with it off)


def test_a_client_gone_before_the_zygote_answers_costs_the_zygote_nothing(tmp_path, zygote):
    """A Gym actor's group killed while one of its servers is being forked: the zygote's answer finds no one (EPIPE).
    The zygote lives on and forks the next server (it used to die of the broken pipe, taking the run's launcher)."""
    import socket

    folder = _server(tmp_path, GROUPED)
    env = dict(os.environ)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(zygote)
    request = {"argv": ["app.py"], "cwd": str(folder), "env": env, "pgid": os.getpgrp(), "ignored": []}
    client.send_message(conn, request, [0, 1, 2])
    conn.close()  # gone before the answer
    time.sleep(0.5)
    proc = _client(folder, {**env, client.SOCKET_VARIABLE: zygote})
    pid, _pgid = map(int, proc.stdout.readline().split())
    assert pid != proc.pid  # forked by the same zygote
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_without_a_zygote_the_client_runs_the_real_interpreter(tmp_path):
    folder = _server(tmp_path, REPORT)
    env = {**os.environ, client.SOCKET_VARIABLE: str(tmp_path / "gone.sock"), client.PYTHON_VARIABLE: sys.executable}
    assert _run(folder, ["app.py", "4"], env, launched=True).returncode == 4
    env.pop(client.SOCKET_VARIABLE)
    assert _run(folder, ["app.py", "5"], env, launched=True).returncode == 5


def test_a_signal_to_the_client_reaches_the_server_and_ends_both_as_python_would(tmp_path, zygote):
    folder = _server(tmp_path, SLEEPER)
    env = {**os.environ, client.SOCKET_VARIABLE: zygote}
    proc = _client(folder, env, process_group=None)
    assert proc.stdout.readline().strip() == "up"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == -signal.SIGINT  # KeyboardInterrupt, then death by SIGINT: what python does


def test_an_ignored_sigint_stays_ignored_in_the_fork_as_python_leaves_it(tmp_path, zygote):
    """A parent that ignores SIGINT starts a `python` that ignores it too: the fork takes the client's dispositions,
    not the zygote's (the zygote blocks signals across the fork until they are set)."""
    folder = _server(tmp_path, GROUPED)
    env = {**os.environ, client.SOCKET_VARIABLE: zygote}
    proc = _client(folder, env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        pid, _pgid = map(int, proc.stdout.readline().split())
        assert pid != proc.pid  # forked
        os.kill(pid, signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None and alive(pid)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_the_relay_holds_a_signal_until_it_knows_the_fork_then_passes_it_on():
    relay = client.Relay()
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert relay.held == [signal.SIGUSR1]
        sleeper = subprocess.Popen(["sleep", "30"])
        relay.forked(sleeper.pid)
        assert sleeper.wait(timeout=10) == -signal.SIGUSR1
    finally:
        relay.held.clear()
        relay.undo()
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


def test_a_forked_server_joins_its_clients_group_and_dies_with_it(tmp_path, zygote):
    """Stopping a Gym actor is one kill of its process group: a server the run's zygote forked must be in it."""
    folder = _server(tmp_path, GROUPED)
    env = {**os.environ, client.SOCKET_VARIABLE: zygote}
    proc = _client(folder, env)
    pid, pgid = map(int, proc.stdout.readline().split())
    assert pid != proc.pid and pgid == proc.pid
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, "the forked server outlived its group's kill"
        time.sleep(0.05)


def test_the_runs_zygotes_are_exported_awaited_and_stopped(tmp_path, monkeypatch):
    """A run's zygotes import with their own declared values; a process goes to the first whose values are its own."""
    from gymgate.services import launcher
    from gymgate.services.launcher import service

    monkeypatch.setenv(launcher.MODE_VARIABLE, launcher.FORK)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with service.serving(tmp_path / "launcher.log", modules=("json",)) as zygotes:
        assert os.environ[client.SOCKET_VARIABLE] == os.pathsep.join(zygotes.paths.values())
        assert os.environ[service.STEM_VARIABLE] == str(zygotes.process.pid)  # what wait_exported watches
        service.wait_exported(tmp_path / "launcher.log", timeout_s=60)  # as a pytest worker waits, by the exports
        assert all(os.path.exists(path) for path in zygotes.paths.values())
        zygotes.wait_ready(timeout_s=60)
        folder = _server(tmp_path, GROUPED)
        for omp in ("1", None):
            env = dict(os.environ, **({"OMP_NUM_THREADS": omp} if omp else {}))
            proc = _client(folder, env)
            pid, _pgid = map(int, proc.stdout.readline().split())
            assert pid != proc.pid  # forked, by the zygote that imported as it would have
            os.killpg(proc.pid, signal.SIGKILL)  # the client and the server it stands for
            proc.wait(timeout=10)
        stem = zygotes.process
        forked = _children(stem.pid)
        assert len(forked) == len(zygotes.paths)  # one zygote each, forked by the stem that imported what they share
    assert stem.poll() is not None  # the zygotes die with it (the same signals), a few ms after:
    assert all(wait_gone(pid, 10) for pid in forked)
    assert not any(os.path.exists(p) for p in zygotes.paths.values())
    assert client.SOCKET_VARIABLE not in os.environ
    assert "gym-servers: refused ['app.py']: differs in ['OMP_NUM_THREADS']" in (tmp_path / "launcher.log").read_text()


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(proc.name))
    return found


def test_a_shared_stage_that_brings_a_thread_pool_starts_no_zygote(tmp_path, monkeypatch):
    """What the stem imports is inherited by every zygote: a module there that sizes a thread pool as it loads
    (preload.toml `pooled`) would have read the stem's values, not each zygote's. No zygote starts; the run says so."""
    from gymgate.errors import InfraError
    from gymgate.services import launcher
    from gymgate.services.launcher import service

    (tmp_path / "lib" / "numexpr").mkdir(parents=True)
    (tmp_path / "lib" / "numexpr" / "__init__.py").write_text("")
    (tmp_path / "lib" / "light.py").write_text("import numexpr\n")
    monkeypatch.setenv(launcher.MODE_VARIABLE, launcher.FORK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "lib"), os.environ.get("PYTHONPATH", "")]))
    with service.serving(tmp_path / "launcher.log", modules=("json", "light")) as zygotes:
        with pytest.raises(InfraError, match="zygotes exited before gym-servers listened"):
            service.wait_exported(tmp_path / "launcher.log", timeout_s=60)  # a pytest worker: the stem is not its own
        with pytest.raises(InfraError, match="zygotes exited with 2 before gym-servers listened"):
            zygotes.wait_ready(timeout_s=60)
    assert "the shared modules brought ['numexpr']" in (tmp_path / "launcher.log").read_text()
    assert service.STEM_VARIABLE not in os.environ  # nothing exported once the run's zygotes are gone
    service.wait_exported(tmp_path / "launcher.log", timeout_s=0)  # nothing to wait for: returns at once


def test_the_launcher_can_be_turned_off_and_refuses_what_it_does_not_know(tmp_path, monkeypatch):
    from gymgate.errors import UsageError
    from gymgate.services import launcher
    from gymgate.services.launcher import service

    monkeypatch.setenv(launcher.MODE_VARIABLE, launcher.EXEC)
    with service.serving(tmp_path / "launcher.log") as zygote:
        assert zygote is None and client.SOCKET_VARIABLE not in os.environ
    monkeypatch.setenv(launcher.MODE_VARIABLE, "spawn")
    with pytest.raises(UsageError, match="spawn"), service.serving(tmp_path / "launcher.log"):
        pass


def test_a_request_whose_start_up_environment_differs_is_refused_and_runs_the_real_interpreter(tmp_path, zygote):
    """Preloading read the zygote's environment (preload.toml's `environment`): a process that would have read other
    values there must start as a fresh interpreter, not as a fork."""
    folder = _server(tmp_path, GROUPED)
    env = {**os.environ, client.SOCKET_VARIABLE: zygote, client.PYTHON_VARIABLE: sys.executable}
    env["OMP_NUM_THREADS"] = "7" if os.environ.get("OMP_NUM_THREADS") != "7" else "3"
    proc = _client(folder, env, process_group=None)
    pid, _pgid = map(int, proc.stdout.readline().split())
    assert pid == proc.pid  # the client exec'd the real interpreter: no fork
    proc.kill()
    proc.wait(timeout=10)


def test_only_what_start_up_reads_is_compared():
    from gymgate.services import launcher

    environ = {"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "PYTHONPATH": "/x", "RAY_JOB_ID": "1", "HF_HOME": "/h"}
    specs = launcher.zygotes()
    assert specs["gym-servers"].read_at_import(environ) == {"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    assert specs["ray-workers"].read_at_import(environ) == {
        "OMP_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "HF_HOME": "/h",
    }
    assert "transformers" in specs["ray-workers"].modules and "transformers" not in specs["gym-servers"].modules
    assert "ray" in specs["ray-workers"].never and "transformers" in specs["gym-servers"].never
