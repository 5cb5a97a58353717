"""The Gym mutation suite's fault mutants (group "faults" in mutants.toml, run with `--faults`): the unchanged 0.7.0
and 0.2.0 sdists handle every fault as their pins do; a judge failure swallowed into a plain reward-0.0 row, a 503 no
longer retried, an error's text passed on to the model in the retry, and a lost connection retried without a bound
each fail exactly their fault paths. A file of its own, sharing each version's baseline run among its mutants."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("faults"))
def test_fault_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
