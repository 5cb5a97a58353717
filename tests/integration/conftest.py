"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    """One runs folder per test module: the mutants of a module share its baseline run (reused by inputs)."""
    return tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-runs")
