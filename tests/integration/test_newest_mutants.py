"""The Gym mutation suite on the newest release (group "newest" in mutants.toml): the unchanged 0.7.0 sdist passes
against the 0.7.0 pin, each defect is caught with exactly its paths, and a failed judge that Gym's failsafe turns
into reward 0.0 is never a pass; and the seed's own assertions (group "seed"): a judge given sampling its
configuration never set, the model server no longer asking for top_logprobs: 0, the row's metadata handed back
rewritten, a reward RL's metrics cannot read, a tool that answers otherwise. A file of its own, sharing its baseline
run among its mutants."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("newest") + group("seed"))
def test_newest_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
