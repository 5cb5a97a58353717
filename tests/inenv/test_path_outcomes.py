"""How run_path turns what it cannot run into outcomes: a Gym that failed to start is an ERROR for its own
paths, an absent environment a SKIP, a drifted example row a FAIL naming both hashes, an exception anywhere an
ERROR with its trace and who is to blame — never a pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from gymgate.cases.named import load_environments
from gymgate.consumer.errors import GymDied, RolloutDataFailure, RolloutTimeout
from gymgate.consumer.rollout import RolloutResult, prepare_rows
from gymgate.endpoint.server import Exchange
from gymgate.kinds.handwritten import case_paths
from gymgate.paths.replayed import replay_path
from gymgate.recordings.read import Recording
from gymgate.runfolder import RunFolder
from gymgate.runner import path as path_module
from gymgate.runner.path import RunContext, run_path
from gymgate.services.fleet import EnvStatus

(MCQA,) = load_environments(["mcqa"])
ACCEPTED, REJECTED = case_paths(MCQA)


def _ctx(tmp_path: Path, status: EnvStatus | None, inputs=None) -> RunContext:
    return RunContext(
        endpoint=None,
        tokenizer=None,
        gym_root=tmp_path,
        run=RunFolder(tmp_path / "run"),
        gym={"version": "x"},
        statuses={"mcqa": status} if status else {},
        inputs=inputs,
    )


def test_failed_start_is_an_error_for_its_paths_with_the_cause(tmp_path):
    status = EnvStatus("mcqa", "failed", "RuntimeError: Process mcqa finished unexpectedly!")
    result = run_path(_ctx(tmp_path, status), ACCEPTED)
    assert result.outcome == "ERROR" and result.reason == "startup: RuntimeError: Process mcqa finished unexpectedly!"
    written = RunFolder(tmp_path / "run").records()["mcqa:accepted"]
    assert written.outcome == "ERROR" and written.reward is None


def test_absent_environment_is_a_skip_with_its_reason(tmp_path):
    status = EnvStatus("mcqa", "skipped", "resources_servers/mcqa/configs/mcqa.yaml is not in nemo-gym 9")
    result = run_path(_ctx(tmp_path, status), REJECTED)
    assert (result.outcome, result.reason) == ("SKIP", status.reason)


def test_drifted_row_is_a_fail_with_both_hashes(tmp_path):
    drift = {"drift": {"expected": "a" * 64, "actual": "b" * 64}}
    result = run_path(_ctx(tmp_path, EnvStatus("mcqa", "ready"), inputs={"mcqa": drift}), ACCEPTED)
    assert result.outcome == "FAIL"
    assert [(f.kind, f.expected, f.actual) for f in result.failures] == [("input_drift", "a" * 64, "b" * 64)]
    assert "input drift" in result.reason and "a" * 64 in result.reason and "b" * 64 in result.reason


def test_a_recording_whose_row_is_not_shipped_is_a_skip_that_says_so_never_a_pass(tmp_path):
    recorded = {"responses_create_params": {"input": "Q?"}, "response": {"output": []}, "reward": 1.0}
    recording = Recording("mcqa", "0123456789", "0.7.0", "f.jsonl", 3, "s" * 64, recorded)
    result = run_path(_ctx(tmp_path, EnvStatus("mcqa", "ready")), replay_path(MCQA, recording))
    assert (result.outcome, result.path) == ("SKIP", "mcqa:rec.0123456789")
    assert "not replayable here: its row is not in the data this Gym ships" in result.reason
    assert result.fidelity["reproduces"] is False and result.recording["line"] == 3


# ----- fail closed: whatever goes wrong in a path, it is never a pass, and the record says who is to blame -----


class FakeEndpoint:
    def __init__(self, refused: list[Exchange] | None = None):
        self.exchanges: list[Exchange] = []
        self.refused = refused or []

    def set_script(self, env, script, fault=None):
        if script is not None:
            self.exchanges.extend(self.refused)  # what Gym sent during the rollout


class FakeHandle:
    actor = None


def _ready_ctx(tmp_path, endpoint=None, **extra) -> RunContext:
    from gymgate.cases.case import load_case, read_row
    from gymgate.services import gym_compat

    raw = read_row(load_case(MCQA), gym_compat.gym_root())
    return RunContext(
        endpoint=endpoint or FakeEndpoint(),
        tokenizer=None,
        gym_root=tmp_path,
        run=RunFolder(tmp_path / "run"),
        gym={"version": "x"},
        handles={"mcqa": FakeHandle()},
        statuses={"mcqa": EnvStatus("mcqa", "ready")},
        inputs={"mcqa": {"raw": raw}},
        **extra,
    )


def _rollout_raises(monkeypatch, exc):
    def fake(*args, **kwargs):
        raise exc

    monkeypatch.setattr(path_module, "run_rollout_sync", fake)


def test_a_rollout_past_its_deadline_is_a_gym_error_and_its_gym_is_torn_down(tmp_path, monkeypatch):
    discarded = []
    _rollout_raises(monkeypatch, RolloutTimeout("no rollout result within 15 s (--path-timeout)"))
    ctx = _ready_ctx(tmp_path, discard=lambda env, why: discarded.append((env, why)))
    result = run_path(ctx, ACCEPTED)
    assert (result.outcome, result.blame) == ("ERROR", "gym")
    assert result.reason.startswith("timeout: no rollout result within 15 s")
    assert discarded == [("mcqa", "mcqa:accepted: timeout")]


def test_a_dead_gym_server_names_its_own_error_line(tmp_path, monkeypatch):
    log = tmp_path / "run" / "logs" / "mcqa.log"
    log.parent.mkdir(parents=True)
    # Before the path: a handled error and a warning that merely names one; neither is this path's cause.
    log.write_text(
        'Traceback (most recent call last):\n  File "x.py"\nValueError: from an earlier path\n'
        "Found ulimit; this can cause errors like `OSError: [Errno 24] Too many open files`\n"
    )

    def dies(*args, **kwargs):
        with log.open("a") as handle:
            handle.write(
                'INFO: started\nTraceback (most recent call last):\n  File "app.py", line 3\n'
                "\x1b[31mModuleNotFoundError: No module named 'gone'\x1b[0m\nINFO: bye\n"
            )
        raise GymDied("Gym server mcqa (pid 7) exited during the rollout")

    monkeypatch.setattr(path_module, "run_rollout_sync", dies)
    result = run_path(_ready_ctx(tmp_path, discard=lambda env, why: None), ACCEPTED)
    assert (result.outcome, result.blame) == ("ERROR", "gym")
    first = result.reason.splitlines()[0]
    assert first == "ModuleNotFoundError: No module named 'gone' (logs/mcqa.log)"  # the cause, without colour codes
    assert "\x1b[" not in RunFolder(tmp_path / "run").records()["mcqa:accepted"].reason


def test_a_refused_override_is_a_contract_fail_not_an_error(tmp_path, monkeypatch):
    refused = Exchange(
        env="mcqa",
        route="chat",
        body={},
        status=400,
        kind="policy",
        violation="gymgate endpoint: sampling guard: policy request has temperature=None",
        blame="contract",
    )
    _rollout_raises(monkeypatch, RolloutDataFailure("/run answered HTTP 500"))
    result = run_path(_ready_ctx(tmp_path, FakeEndpoint([refused])), ACCEPTED)
    assert (result.outcome, result.blame) == ("FAIL", "contract")
    assert [(f.kind, f.field) for f in result.failures] == [("request_contract", "policy request")]
    assert "temperature=None" in result.reason


def test_a_gym_error_without_a_refusal_is_a_gym_error(tmp_path, monkeypatch):
    _rollout_raises(monkeypatch, RolloutDataFailure("/run answered HTTP 422: bad row"))
    result = run_path(_ready_ctx(tmp_path), ACCEPTED)
    assert (result.outcome, result.blame) == ("ERROR", "gym") and "HTTP 422" in result.reason


def test_a_check_that_cannot_read_gyms_result_is_an_error_never_a_pass(tmp_path, monkeypatch):
    full = {"reward": 1.0, "responses_create_params": "mutated", "response": {"output": []}}
    processed = {"full_result": full, "gym_result": full, "message_log": []}

    def fake(actor, batch, tokenizer, config, **kwargs):
        prepare_rows(batch["extra_env_info"], config)  # the RL overrides, as the real driver applies them
        return RolloutResult({}, {}, [processed], {})

    monkeypatch.setattr(path_module, "run_rollout_sync", fake)
    result = run_path(_ready_ctx(tmp_path), ACCEPTED)
    assert (result.outcome, result.blame) == ("ERROR", "gym")
    assert result.reason.startswith("check request_contract could not read Gym's result: AttributeError")
    assert "Traceback" in result.reason


@pytest.mark.parametrize("where", ["ensure", "transform"])
def test_an_exception_anywhere_is_an_error_with_its_trace(tmp_path, where):
    ctx = _ready_ctx(tmp_path)
    if where == "ensure":

        def broken(env):
            raise OSError("no space left on device")

        ctx.ensure = broken
        blame = "harness"  # before the path touched Gym: gymgate's own fault
    else:
        ctx.inputs = {"mcqa": {"raw": "not a row"}}  # Gym's example data no longer has the row's shape
        blame = "gym"
    result = run_path(ctx, ACCEPTED)
    assert (result.outcome, result.blame) == ("ERROR", blame), result.reason
    assert "Traceback" in result.reason
    assert RunFolder(tmp_path / "run").records()["mcqa:accepted"].outcome == "ERROR"


def test_ray_failures_are_the_harness(tmp_path):
    import ray.exceptions

    from gymgate.services.ray_cluster import is_ray_failure

    assert is_ray_failure(ray.exceptions.RaySystemError("gcs gone"))
    assert not is_ray_failure(RuntimeError("Process `mcqa` finished unexpectedly!"))


def test_an_attempt_that_errs_in_a_shared_instance_is_run_again_alone_and_that_one_counts(tmp_path, monkeypatch):
    """A neighbour may have broken a shared Gym instance: the path is judged on an instance of its own."""
    isolated, shared = [], {"mcqa": "mcqa+1"}
    _rollout_raises(monkeypatch, GymDied("Gym server policy_model (pid 7) exited during the rollout"))
    ctx = _ready_ctx(
        tmp_path,
        shared=lambda env: shared[env],
        isolate=lambda env: isolated.append(env) or shared.update({env: ""}),
    )
    result = run_path(ctx, ACCEPTED)
    assert isolated == ["mcqa"] and result.outcome == "ERROR"
    assert result.alone_after["instance"] == "mcqa+1" and result.alone_after["outcome"] == "ERROR"
    assert "exited during the rollout" in result.alone_after["reason"]
    written = RunFolder(tmp_path / "run").records()["mcqa:accepted"]
    assert written.alone_after == result.alone_after and written.repeats == []

    # A path that passes, fails or is skipped in a shared instance is judged there: nothing runs again.
    monkeypatch.setattr(path_module, "_run", lambda ctx, path, result, script: result.skip("not here"))
    shared["mcqa"], isolated[:] = "mcqa+1", []
    assert run_path(ctx, REJECTED).alone_after == {} and isolated == []


@pytest.mark.parametrize("ending", ["fault reported by /run", "override refused"])
def test_a_path_that_ends_in_a_raised_rollout_keeps_its_time_and_so_a_deadline_in_a_bump(tmp_path, monkeypatch, ending):
    """However a rollout ends, its time is kept, as a returned rollout's is: a bump derives the deadline of every path
    that ran to its end (a fault path judged on Gym's report of the failure, a FAIL the rollout raised) from it, so a
    candidate that hangs there is judged in the derived deadline, not in --path-timeout."""
    from gymgate.acceptance.limits import ROLLOUT_TIMING, derive_deadlines
    from gymgate.consumer.errors import GymTransportError
    from gymgate.kinds.fault import fault_paths

    if ending == "fault reported by /run":
        (path,) = [p for p in fault_paths([ACCEPTED, REJECTED], "all") if p.name == "fault.policy_reset_every"]
        seen = [Exchange(env="mcqa", route="chat", body={}, status=0, kind="policy", turn=0, injected="r")] * 3
        _rollout_raises(monkeypatch, GymTransportError("/run answered HTTP 500: ClientOSError"))
        outcome = "PASS"
    else:
        path = ACCEPTED
        seen = [
            Exchange(
                env="mcqa", route="chat", body={}, status=400, kind="policy", violation="temperature", blame="contract"
            )
        ]
        _rollout_raises(monkeypatch, RolloutDataFailure("/run answered HTTP 500"))
        outcome = "FAIL"
    result = run_path(_ready_ctx(tmp_path, FakeEndpoint(seen)), path)
    assert result.outcome == outcome, result.reason
    written = RunFolder(tmp_path / "run").records()[path.id]
    assert all(ROLLOUT_TIMING in a.timings for a in written.attempt_records())
    assert derive_deadlines([written]) == {path.id: 30.0}
