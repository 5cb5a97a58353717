"""One suite of Gym-shaped tests run for real (gymgate.gymtests.execute) in the 0.7.0 pin's environment with the
test layer: a hang costs only the hung test, what tests write stays in the scratch tree, what they start does not
outlive them, the network is unreachable, and each outcome is read back as it happened."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

from gymgate.envs.prepare import prepare_env
from gymgate.gymtests import overlay
from gymgate.gymtests.execute import FAILED, FINISHED, HUNG, PASSED, SKIPPED, Suite, run_suite
from gymgate.gymtests.layer import layer_for
from gymgate.gymtests.roots import Root
from gymgate.processes import alive
from gymgate.refs import resolve_ref

ROOT = Root("resources_servers/toy", "toy")
TESTS = """
import os, pathlib, subprocess, sys, tempfile, time, urllib.request

import pytest


def test_writes_stay_inside():
    pathlib.Path(tempfile.gettempdir(), "written.txt").write_text("x")
    home = pathlib.Path(os.path.expanduser("~"))
    (home / "tmpdir.txt").write_text(tempfile.gettempdir())
    assert home.is_relative_to(pathlib.Path.cwd().parent.parent)
    assert len(tempfile.gettempdir()) < 40  # Ray's sockets go under it: AF_UNIX paths are at most 107 bytes


def test_starts_a_child():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    pathlib.Path(os.path.expanduser("~"), "child.pid").write_text(str(child.pid))


def test_hangs():
    time.sleep(600)


def test_fails():
    assert 1 == 2


def test_skips():
    pytest.skip("needs a GPU")


def test_reaches_the_network():
    urllib.request.urlopen("http://example.com", timeout=20)


async def test_async():
    assert True
"""


def test_a_suite_runs_bounded_contained_and_read_back(tmp_path):
    env = prepare_env(resolve_ref("0.7.0"))
    gym = tmp_path / "gym"
    (gym / ROOT.tests).mkdir(parents=True)
    (gym / ROOT.tests / "__init__.py").write_text("")
    (gym / ROOT.tests / "test_toy.py").write_text(textwrap.dedent(TESTS))
    (gym / "pyproject.toml").write_text('[tool.pytest.ini_options]\nasyncio_mode = "auto"\n')
    tree = tmp_path / "suite"
    config = overlay.build(gym, gym, [ROOT], tree)
    suite = Suite("toy", "toy", tree, config, env, layer_for(env.python, env.interpreter.version))
    started = time.monotonic()
    (run,) = run_suite(suite, [ROOT], tmp_path / "logs", workers=1, timeout_s=40)
    assert time.monotonic() - started < 200
    outcomes = {name.rsplit("::", 1)[-1]: test.outcome for name, test in run.tests.items()}
    assert outcomes == {
        "test_writes_stay_inside": PASSED,
        "test_starts_a_child": PASSED,
        "test_hangs": HUNG,  # killed with its process at the bound; the rest ran again without it
        "test_fails": FAILED,
        "test_skips": SKIPPED,
        "test_reaches_the_network": FAILED,
        "test_async": PASSED,  # the layer's pytest-asyncio
    }, run.tests
    assert run.status == FINISHED
    assert "assert 1 == 2" in run.tests[f"{ROOT.tests}/test_toy.py::test_fails"].message
    home = tree / ".tmp" / "home"
    assert not Path((home / "tmpdir.txt").read_text()).exists()  # the suite's TMPDIR went with it
    pid = int((home / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pid), "a process a test started outlived its suite"
