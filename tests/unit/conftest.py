"""Shared fixtures for harness-side unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private gymgate cache so tests never touch (or depend on) the user's."""
    path = tmp_path / "cache"
    monkeypatch.setenv("GYMGATE_CACHE", str(path))
    return path
