"""Shared fixtures for harness-side unit tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private gymgate cache so tests never touch (or depend on) the user's."""
    path = tmp_path / "cache"
    monkeypatch.setenv("GYMGATE_CACHE", str(path))
    return path


@pytest.fixture(autouse=True)
def _settings_stay_in_their_test():
    """The command line hands a settings file's values on as GYMGATE_* variables of this process (for its children):
    a test that runs it with a settings file must not leave them to the next test, nor its read settings."""
    from gymgate.options import config

    before = {k: v for k, v in os.environ.items() if k.startswith("GYMGATE_")}
    exported = set(config.EXPORTED)
    yield
    for key in [k for k in os.environ if k.startswith("GYMGATE_")]:
        if key not in before:
            del os.environ[key]
    os.environ.update(before)
    config.EXPORTED.clear()
    config.EXPORTED.update(exported)
    config.settings.cache_clear()
