"""The nox sessions' exit codes (noxfile.py, loaded with a stand-in for nox): a pin of the matrix that finds failures
lets nox go on to the next pin and the report over every ref — which alone gives the verdict — while an error stops
everything, and every other session leaves nox with gymgate's own code."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stand_in_nox() -> types.ModuleType:
    def session(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda function: function

    nox = types.ModuleType("nox")
    nox.session = session
    nox.parametrize = lambda *args, **kwargs: lambda function: function
    nox.options = types.SimpleNamespace()
    nox.Session = object
    return nox


@pytest.fixture
def noxfile(monkeypatch):
    monkeypatch.setitem(sys.modules, "nox", _stand_in_nox())
    monkeypatch.chdir(ROOT)  # the pins are listed from the checkout
    spec = importlib.util.spec_from_file_location("gymgate_noxfile", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "_forward_sigterm", lambda: None)
    monkeypatch.setattr(module, "_harness", lambda session: None)
    return module


class Session:
    """Runs nothing: gymgate "exits" with `code`, written where the real CLI writes it."""

    def __init__(self, code: int, posargs: list[str] | None = None):
        self.code, self.posargs, self.ran, self.logged = code, posargs or [], [], []

    def run(self, *args, env, **kwargs):
        self.ran.append(args)
        Path(env["GYMGATE_EXIT_FILE"]).write_text(str(self.code))

    def log(self, text: str) -> None:
        self.logged.append(text)


def test_a_pin_with_failures_lets_the_matrix_go_on_to_its_report(noxfile):
    pin = Session(1)
    noxfile.matrix(pin, "0.2.0")  # returns: nox runs the next pin
    assert pin.ran == [("gymgate", "matrix", "--only", "0.2.0", "--reuse-since", noxfile.INVOCATION_STARTED)]
    assert "judges" in pin.logged[0]
    with pytest.raises(SystemExit) as stopped:
        noxfile.matrix(Session(1), noxfile.MATRIX_ALL)  # the report over every ref is the verdict
    assert stopped.value.code == 1


@pytest.mark.parametrize("code", [2, 3, 130, 7])
def test_an_error_on_a_pin_stops_the_matrix(noxfile, code):
    with pytest.raises(SystemExit) as stopped:
        noxfile.matrix(Session(code), "0.2.0")
    assert stopped.value.code == code


def test_accept_leaves_nox_with_gymgates_code(noxfile):
    noxfile.accept(Session(0))
    with pytest.raises(SystemExit) as stopped:
        noxfile.accept(Session(1, ["--gym-ref", "0.7.0"]))
    assert stopped.value.code == 1


class Skipped(Exception):
    pass


def test_on_a_cluster_the_pins_sessions_step_aside_and_the_report_session_sends_every_pin(noxfile, monkeypatch):
    """Each pin in a session of its own would send one unit at a time; matrix(pin='all') sends them all at once."""

    def skip(reason):
        raise Skipped(reason)

    monkeypatch.delenv("GYMGATE_RAY_ADDRESS", raising=False)
    pin = Session(0, ["--ray-address", "head:6379"])
    pin.skip = skip
    with pytest.raises(Skipped, match="sends every pin at once"):
        noxfile.matrix(pin, "0.3.0")
    assert pin.ran == []
    everything = Session(0, ["--ray-address", "head:6379"])
    noxfile.matrix(everything, noxfile.MATRIX_ALL)
    assert everything.ran[0][:2] == ("gymgate", "matrix") and "--only" not in everything.ran[0]
    monkeypatch.setenv("GYMGATE_RAY_ADDRESS", "head:6379")
    by_variable = Session(0)
    by_variable.skip = skip
    with pytest.raises(Skipped):
        noxfile.matrix(by_variable, "0.3.0")
    monkeypatch.delenv("GYMGATE_RAY_ADDRESS")
    here = Session(0)
    noxfile.matrix(here, "0.3.0")
    assert "--only" in here.ran[0]


def test_the_harness_phase_runs_the_costliest_files_first():
    """tests/conftest.py's order reaches xdist only without its own reordering, and names files that exist."""
    assert '"--no-loadscope-reorder"' in (ROOT / "noxfile.py").read_text()
    from tests.conftest import COSTS

    assert COSTS and all((ROOT / name).is_file() for name in COSTS), sorted(COSTS)


class Background(Session):
    """What `_beside` reads of a session; `error` stops it as nox's does."""

    def __init__(self):
        super().__init__(0)
        self.env, self.bin_paths = {}, []
        self.virtualenv = types.SimpleNamespace(location=sys.prefix)

    def error(self, text: str) -> None:
        raise SystemExit(text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"


def test_tests_run_beside_the_default_set_fail_the_session_and_never_outlive_it(noxfile, tmp_path, capsys, monkeypatch):
    session = Background()
    with noxfile._beside(session, "beside", [sys.executable, "-c", "print('in-env ok')"]):
        pass
    assert "in-env ok" in capsys.readouterr().out  # shown once it ended

    with pytest.raises(SystemExit, match="failed"), noxfile._beside(session, "beside", [sys.executable, "-c", "1/0"]):
        pass

    pid_file = tmp_path / "pid"
    sleeper = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)",
    ]
    with pytest.raises(KeyboardInterrupt), noxfile._beside(session, "beside", sleeper):  # Ctrl-C in the block
        while not pid_file.is_file() or not pid_file.read_text():
            time.sleep(0.05)
        raise KeyboardInterrupt
    assert not _alive(int(pid_file.read_text()))

    pid_file.unlink()
    monkeypatch.setattr(noxfile, "BESIDE_TIMEOUT_S", 1.0)
    with pytest.raises(SystemExit, match="still running"), noxfile._beside(session, "beside", sleeper):
        pass
    assert not _alive(int(pid_file.read_text()))


class _Session:
    """What the suite's HOME asks of a nox session."""

    def __init__(self, location: Path):
        self.virtualenv = types.SimpleNamespace(location=str(location))
        self.env: dict[str, str] = {}

    def error(self, message: str):
        raise RuntimeError(message)


def test_the_suite_runs_in_a_home_of_its_own_holding_a_ray_token_and_fails_when_its_ray_folder_changes(
    noxfile, tmp_path, monkeypatch
):
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PYENV_ROOT", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "real"))
    session = _Session(tmp_path / "venv")
    home, token = noxfile._home_with_a_ray_token(session)
    assert session.env["HOME"] == str(home) and (home / ".ray" / "auth_token").read_text() == token
    assert session.env["XDG_CACHE_HOME"] == str(tmp_path / "real" / ".cache")  # gymgate's and uv's caches stay put
    assert session.env["PYENV_ROOT"] == str(tmp_path / "real" / ".pyenv")
    noxfile._ray_home_untouched(session, home, token)
    (home / ".ray" / "session_latest").write_text("")  # what a Ray run would leave
    with pytest.raises(RuntimeError, match="the suite's ~/.ray changed"):
        noxfile._ray_home_untouched(session, home, token)
    (home / ".ray" / "session_latest").unlink()
    (home / ".ray" / "auth_token").write_text("another")  # a token Ray wrote over the suite's
    with pytest.raises(RuntimeError, match="the suite's ~/.ray changed"):
        noxfile._ray_home_untouched(session, home, token)


def test_nox_passes_on_every_exit_code_gymgate_declares(noxfile):
    """nox's runner must not turn one of gymgate's codes into its own failure (then a 130 or a 3 would read as
    nox's 1); the noxfile cannot import gymgate, so it lists them itself."""
    from gymgate.errors import DECLARED, EXIT_UNJUDGED

    assert DECLARED == noxfile.GYMGATE_EXIT_CODES
    assert noxfile.EXIT_UNJUDGED == EXIT_UNJUDGED
