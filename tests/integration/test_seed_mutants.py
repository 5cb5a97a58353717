"""The seed's own assertions as Gym mutants (groups "seed" and "seed-tools" in mutants.toml): a judge given
sampling its configuration never set, the model server no longer asking for top_logprobs: 0, the row's metadata
handed back rewritten, a reward RL's metrics cannot read, a tool that answers otherwise. Each is caught with exactly
its paths on the newest release; the unchanged 0.7.0 sdist passes (test_newest_mutants.py)."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("seed") + group("seed-tools"))
def test_seed_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
