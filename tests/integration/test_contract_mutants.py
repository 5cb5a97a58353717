"""The Gym mutation suite, contract changes on paths that still pass (group "contract" in mutants.toml): a tool
output cut short, rewritten instructions, a new request parameter (then acknowledged). A file of its own, with its
own baseline run, so it runs beside the other mutants (`nox -s tests` runs two test files at a time)."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("contract"))
def test_contract_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
