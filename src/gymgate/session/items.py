"""The fourteen rollout paths: seven environments x accepted / rejected, each through the real Gym
services and the RL consumer boundary, checked exactly (see gymgate.acceptance.checks)."""

from __future__ import annotations

import os

import pytest

from gymgate.acceptance.path import run_path
from gymgate.cases.environments import all_environments
from gymgate.outcomes import PASS, SKIP
from gymgate.pathid import MODES, PathId

PATHS = [(env, mode) for env in all_environments() for mode in MODES]


@pytest.mark.parametrize(("env", "mode"), PATHS, ids=[PathId.of(e.name, m) for e, m in PATHS])
def test_path(run_context, env, mode, request):
    crash = os.environ.get("GYMGATE_SELFTEST_CRASH_PATH")  # fault injection for gymgate's own runner tests
    if crash == PathId.of(env.name, mode):
        os._exit(3)
    result = run_path(run_context, env, mode)
    if result.outcome == SKIP:
        pytest.skip(result.reason)
    assert result.outcome == PASS, f"{result.outcome}: {result.reason}\n" + "\n".join(f.line() for f in result.failures)
