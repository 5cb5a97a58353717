"""Fixtures shared by the integration tests."""

from __future__ import annotations

import os

import pytest

# Fault paths (issue 30) are judged by test_fault_mutants.py, which asks for them (`--faults`); every other gymgate
# these tests start runs without them, so that each keeps judging what it is about in the time CI has.
os.environ.setdefault("GYMGATE_FAULTS", "none")
# Variant paths (issue 31) likewise: test_variant_mutants.py asks for them (`--variants`).
os.environ.setdefault("GYMGATE_VARIANTS", "none")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    """One runs folder per test module: the mutants of a module share its baseline run (reused by inputs)."""
    return tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-runs")
