"""The Gym mutation suite's fault mutants (group "faults" in mutants.toml, run with `--faults`): the unchanged 0.7.0
sdist handles every fault as the pin does, a judge failure swallowed into a plain reward-0.0 row and a 503 no
longer retried each fail exactly their fault paths. A file of its own, sharing its baseline run among its mutants."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("faults"))
def test_fault_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
