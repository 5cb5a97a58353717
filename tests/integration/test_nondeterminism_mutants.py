"""Gyms that do not do the same thing twice (group "nondeterminism" in mutants.toml): a reward by chance, a
verifier field by chance, a model server that alternates between calls. Each passes its first attempt, so only
the comparison of a path's attempts sees it; each is regressed with exactly its paths in every one of its tries."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("nondeterminism"))
def test_nondeterministic_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
