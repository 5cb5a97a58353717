"""The Gym mutation suite on the newest release (group "newest" in mutants.toml): the unchanged 0.7.0 sdist passes
against the 0.7.0 pin, each defect is caught with exactly its paths, and a failed judge that Gym's failsafe turns
into reward 0.0 is never a pass. A file of its own, with its own baseline run."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("newest"))
def test_newest_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
