"""The Gym mutation suite's variant mutants (group "variants" in mutants.toml, run with `--variants`): the unchanged
0.7.0 sdist judges every form of every answer as its pin does; a verifier that breaks one form (a boxed form, a way
of reading input) fails exactly that form's variant paths. A file of its own, sharing the baseline run."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("variants"))
def test_variant_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
