"""Defects only the recorded rollouts catch (group "replay" in mutants.toml): each environment's hand-written
paths pass on these mutants; the replays of what real models wrote — long reasoning before the boxed letter,
programs that read their input line by line — do not. Each mutant's other environment, recordings replayed, must
come out same-pass with nothing changed (no false alarm). A file of its own, sharing its baseline run."""

from __future__ import annotations

import pytest

from tests.integration.mutation import group, judge


@pytest.mark.parametrize("name", group("replay"))
def test_replay_mutant(name, runs, tmp_path):
    judge(name, runs, tmp_path)
