"""The Gym mutation suite's RL-profile mutants (group "rl" in mutants.toml): a verifier that marks sound verdicts as
degraded passes under a profile whose RL trains on them and is reported as a change, not a regression; a Gym that
leaves the reasoning in the answer text is a reward regression under a recipe whose penalty zeroes it. A file of
its own, sharing the baseline run."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("rl"))
def test_rl_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
