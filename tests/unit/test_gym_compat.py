"""Gym version quirks handled in one place (services/gym_compat.py), checked with fakes of Gym's modules."""

from __future__ import annotations

import sys
import time
import types

import pytest

from gymgate.services import gym_compat


def test_readiness_checks_are_shortened_while_gym_starts_and_restored_after_even_on_error():
    module = types.ModuleType("fake_gym_cli")
    module.sleep = time.sleep

    class RunHelper:
        pass

    RunHelper.__module__ = module.__name__
    sys.modules[module.__name__] = module
    try:
        with pytest.raises(RuntimeError), gym_compat.readiness_polled_often(RunHelper) as applied:
            assert applied
            began = time.monotonic()
            module.sleep(3)
            assert time.monotonic() - began < 1.0
            raise RuntimeError("start failed")
        assert module.sleep is time.sleep
        module.sleep = lambda seconds: None  # a Gym that waits some other way is left as it is
        with gym_compat.readiness_polled_often(RunHelper) as applied:
            assert not applied
    finally:
        del sys.modules[module.__name__]
