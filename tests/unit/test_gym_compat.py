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


def test_the_server_client_is_made_once_per_head_server_and_a_failed_one_is_not_kept():
    made = []

    class Helper:
        def __setattr__(self, name, value):  # as Gym's RolloutCollectionHelper, a pydantic model, refuses it
            raise ValueError(f'"Helper" object has no field "{name}"')

        def setup_server_client(self, head_server_config=None):
            made.append(head_server_config)
            if head_server_config.port == 0:
                raise ConnectionError("head server not listening")
            return object()

    head = types.SimpleNamespace(host="127.0.0.1", port=20001)
    helper = gym_compat.server_client_reused(Helper())
    first = helper.setup_server_client(head)
    assert helper.setup_server_client(types.SimpleNamespace(host="127.0.0.1", port=20001)) is first
    assert helper.setup_server_client(types.SimpleNamespace(host="127.0.0.1", port=20201)) is not first
    for _ in range(2):
        with pytest.raises(ConnectionError):
            helper.setup_server_client(types.SimpleNamespace(host="127.0.0.1", port=0))
    assert len(made) == 4  # one per head server, and each failed call is Gym's own again

    class Older:  # a Gym whose helper has no such method is left as it is
        pass

    older = Older()
    assert gym_compat.server_client_reused(older) is older and not hasattr(older, "setup_server_client")


def test_gym_is_located_and_its_start_overrides_read_without_importing_it(tmp_path, monkeypatch):
    """Importing nemo_gym.global_config (hydra, omegaconf) cost every pytest worker 0.8 CPU-s: gymgate finds
    Gym's folder and reads the module's source instead. A Gym that fails to import proves nothing imported it."""
    package = tmp_path / "nemo_gym"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('nemo_gym was imported')\n")
    (package / "global_config.py").write_text(f"{gym_compat.MODEL_PROBE_KEY} = 'x'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "nemo_gym" or m.startswith("nemo_gym.")]:
        monkeypatch.delitem(sys.modules, name)
    gym_compat.start_overrides.cache_clear()
    try:
        assert gym_compat.gym_root() == tmp_path.resolve()
        assert gym_compat.start_overrides() == {gym_compat.MODEL_PROBE_KEY: gym_compat.MODEL_PROBE_S}
        (package / "global_config.py").write_text("nothing = None\n")  # a Gym before 0.5.0
        gym_compat.start_overrides.cache_clear()
        assert gym_compat.start_overrides() == {}
        assert "nemo_gym" not in sys.modules
    finally:
        gym_compat.start_overrides.cache_clear()
