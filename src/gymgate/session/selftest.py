"""gymgate judging itself on real paths: a wrong script must make exactly the right path fail, with a
message a person can act on; a generation parameter that does not reach the model must be caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gymgate.cases.named import load_environments
from gymgate.consumer.rollout import GenerationConfig
from gymgate.kinds.handwritten import case_paths
from gymgate.outcomes import CONTRACT, FAIL, PASS
from gymgate.runfolder import RunFolder
from gymgate.runner.path import run_path

pytestmark = pytest.mark.selftest


@pytest.fixture
def mcqa(run_context):
    (env,) = [e for e in load_environments() if e.name == "mcqa"]
    if run_context.statuses.get("mcqa") is None:
        pytest.skip("mcqa not started in this session (--env)")
    return {p.name: p for p in case_paths(env)}


def test_swapped_answers_fail_exactly_the_path_they_were_swapped_into(run_context, mcqa, tmp_path):
    accepted, rejected = mcqa["accepted"], mcqa["rejected"]
    swapped = replace(accepted.script, turns=rejected.script.turns)
    result = run_path(run_context, accepted, script=swapped, into=RunFolder(tmp_path))
    assert result.outcome == FAIL
    kinds = {(f.kind, f.field): (f.expected, f.actual) for f in result.failures}
    assert kinds[("reward", "reward")] == (1.0, 0.0)
    assert kinds[("verifier", "extracted_answer")] == ("B", "A")
    assert "[reward] reward: expected 1.0, got 0.0" in result.reason
    assert not [f for f in result.failures if f.kind not in ("reward", "verifier")]  # tokens, contract still exact

    reverse = replace(rejected.script, turns=accepted.script.turns)
    result = run_path(run_context, rejected, script=reverse, into=RunFolder(tmp_path))
    assert result.outcome == FAIL and ("reward", "reward") in {(f.kind, f.field) for f in result.failures}

    assert run_path(run_context, accepted, into=RunFolder(tmp_path)).outcome == PASS


def test_an_override_that_does_not_reach_the_model_is_a_contract_fail_not_a_reward(run_context, mcqa, tmp_path):
    drifted = replace(run_context, config=GenerationConfig(max_new_tokens=4096, temperature=0.5, top_p=0.95))
    result = run_path(drifted, mcqa["accepted"], into=RunFolder(tmp_path))
    assert (result.outcome, result.blame) == (FAIL, CONTRACT)
    assert [(f.kind, f.field) for f in result.failures] == [("request_contract", "policy request")]
    assert "sampling guard" in result.reason and "temperature=0.5" in result.reason
    assert result.reward is None
