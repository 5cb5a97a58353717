"""How run_path turns what it cannot run into outcomes: a Gym that failed to start is an ERROR for its own
paths, an absent environment a SKIP, a drifted example row a FAIL naming both hashes — never a pass."""

from __future__ import annotations

import json
from pathlib import Path

from gymgate.acceptance.path import RunContext, run_path
from gymgate.catalog import load_environments
from gymgate.services.fleet import EnvStatus

(MCQA,) = load_environments(["mcqa"])


def _ctx(tmp_path: Path, status: EnvStatus | None, inputs=None) -> RunContext:
    return RunContext(
        endpoint=None,
        tokenizer=None,
        gym_root=tmp_path,
        run_dir=tmp_path / "run",
        gym={"version": "x"},
        statuses={"mcqa": status} if status else {},
        inputs=inputs,
    )


def test_failed_start_is_an_error_for_its_paths_with_the_cause(tmp_path):
    status = EnvStatus("mcqa", "failed", "RuntimeError: Process mcqa finished unexpectedly!")
    result = run_path(_ctx(tmp_path, status), MCQA, "accepted")
    assert result.outcome == "ERROR" and result.reason == "startup: RuntimeError: Process mcqa finished unexpectedly!"
    written = json.loads((tmp_path / "run" / "paths" / "mcqa-accepted.json").read_text())
    assert written["outcome"] == "ERROR" and written["reward"] is None


def test_absent_environment_is_a_skip_with_its_reason(tmp_path):
    status = EnvStatus("mcqa", "skipped", "resources_servers/mcqa/configs/mcqa.yaml is not in nemo-gym 9")
    result = run_path(_ctx(tmp_path, status), MCQA, "rejected")
    assert (result.outcome, result.reason) == ("SKIP", status.reason)


def test_drifted_row_is_a_fail_with_both_hashes(tmp_path):
    drift = {"drift": {"expected": "a" * 64, "actual": "b" * 64}}
    result = run_path(_ctx(tmp_path, EnvStatus("mcqa", "ready"), inputs={"mcqa": drift}), MCQA, "accepted")
    assert result.outcome == "FAIL"
    assert [(f.kind, f.expected, f.actual) for f in result.failures] == [("input_drift", "a" * 64, "b" * 64)]
    assert "input drift" in result.reason and "a" * 64 in result.reason and "b" * 64 in result.reason
