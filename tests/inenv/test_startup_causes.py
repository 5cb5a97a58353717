"""A failed start-up's reason and blame (services/fleet.py startup_failure), with Ray's real exception types."""

from __future__ import annotations

import ray.exceptions

from gymgate.outcomes import GYM, HARNESS
from gymgate.services.fleet import CANNOT_RUN_YET, startup_failure
from tests.unit.test_gymlog import SERVER_TRACEBACK, UV_OFFLINE, _log


def _wrapped(message: str) -> ray.exceptions.RayTaskError:
    """What ray.get raises when the actor's _spinup raised `RuntimeError(message)`."""
    cause = RuntimeError(message)
    return ray.exceptions.RayTaskError("GymActor._spinup", "Traceback …", cause).as_instanceof_cause()


def test_a_gym_that_crashes_by_itself_is_blamed_on_gym_and_its_own_line_leads(tmp_path):
    reason, blame = startup_failure(
        _wrapped("Process policy_model finished unexpectedly!"), _log(tmp_path, SERVER_TRACEBACK)
    )
    assert blame == GYM
    assert reason.splitlines()[0] == "RuntimeError: model server refuses to import (logs/mcqa.log)"
    assert "RuntimeError: Process policy_model finished unexpectedly!" in reason
    assert "ray::" not in reason.splitlines()[1]  # Gym's exception, out of Ray's wrapper


def test_a_start_up_that_made_gym_build_a_venv_is_gymgates_gap(tmp_path):
    reason, blame = startup_failure(
        _wrapped("Process mcqa_environment_server finished unexpectedly!"), _log(tmp_path, UV_OFFLINE)
    )
    assert blame == HARNESS  # unjudged (exit 2), never "Gym regressed"
    assert reason.startswith(f"{CANNOT_RUN_YET}: uv: No solution found when resolving: `pip`")
