"""The rollout paths, one test item each: exactly the paths the run's plan holds (plan.jsonl, whatever their kind:
gymgate.kinds), each through the real Gym services and the RL consumer boundary (gymgate.runner.path), checked
exactly (gymgate.acceptance.checks)."""

from __future__ import annotations

import os

import pytest

from gymgate.outcomes import PASS, SKIP
from gymgate.runner.path import run_path
from gymgate.session.plugin import session_paths


def pytest_generate_tests(metafunc):
    if "path" in metafunc.fixturenames:
        paths = session_paths(metafunc.config)
        metafunc.parametrize("path", paths, ids=[p.id for p in paths])


def test_path(run_context, path, request):
    crash = os.environ.get("GYMGATE_SELFTEST_CRASH_PATH")  # fault injection for gymgate's own runner tests
    if crash == path.id:
        os._exit(3)
    result = run_path(run_context, path)
    if result.outcome == SKIP:
        pytest.skip(result.reason)
    assert result.outcome == PASS, f"{result.outcome}: {result.reason}\n" + "\n".join(f.line() for f in result.failures)
