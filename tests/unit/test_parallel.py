"""The fan-out plan, the scheduler's scope mapping, the run summary and the live progress view."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gymgate.cases.named import load_environments
from gymgate.errors import EXIT_UNJUDGED
from gymgate.harness.progress import Progress
from gymgate.outcomes import EnvState
from gymgate.runfolder import EnvStatus, RunFolder, RunMark
from gymgate.session.owners import plan
from gymgate.session.schedule import env_of
from gymgate.shards.split import load_costs
from gymgate.verdict import run_exit as verdict
from tests.helpers import record

ENVS = [e.name for e in load_environments()]


def test_plan_is_deterministic_total_and_balanced():
    for workers in (1, 2, 3, 7, 16):
        owners = plan(ENVS, workers)
        assert owners == plan(list(reversed(ENVS)), workers)  # the caller's order never matters
        assert set(owners) == set(ENVS)
        assert set(owners.values()) == {f"gw{i}" for i in range(min(workers, len(ENVS)))}
    two = plan(ENVS, 2)
    assert owners_count(two, "gw0") in (3, 4) and owners_count(two, "gw1") in (3, 4)
    first, second = sorted(ENVS, key=lambda e: -load_costs().get(e, 0.0))[:2]
    assert two[first] != two[second]  # the two heaviest measured (shards/costs.toml) go to different workers


def owners_count(owners: dict[str, str], worker: str) -> int:
    return sum(1 for w in owners.values() if w == worker)


def test_scope_of_a_test_is_its_environment():
    assert env_of("src/gymgate/session/items.py::test_path[code_gen:accepted]") == "code_gen"
    assert env_of("src/gymgate/session/selftest.py::test_swapped_answers") == "mcqa"
    assert env_of("tests/other.py::test_x") == "tests/other.py::test_x"


def test_missing_records_are_errors_and_verdicts_follow_outcomes(tmp_path):
    run = RunFolder(tmp_path)
    run.write_record(record("mcqa:accepted", "PASS"))
    (tmp_path / "paths" / "code_gen-accepted.json").write_text("{not json")
    records = run.records(expected=["mcqa:accepted", "mcqa:rejected"])
    missing = records["mcqa:rejected"]
    assert missing.outcome == "ERROR" and missing.reason.startswith("no record:") and missing.missing
    unreadable = records["code_gen:accepted"]  # a damaged record is an ERROR, never skipped over
    assert unreadable.outcome == "ERROR" and "unreadable" in unreadable.reason
    assert verdict(list(records.values()), pytest_code=1) == 1
    assert verdict([records["mcqa:accepted"]], pytest_code=0) == 0
    assert verdict([records["mcqa:accepted"]], pytest_code=0, lifecycle=["mcqa: shutdown timed out"]) == 1
    assert verdict([], pytest_code=0) == EXIT_UNJUDGED  # nothing judged
    assert verdict([record("mcqa:accepted", "SKIP")], pytest_code=2) == EXIT_UNJUDGED  # pytest itself failed to run
    # The run's own mark names what it expected: a path it never wrote is found without being told.
    run.write_mark(RunMark(complete=True, expected=["mcqa:rejected"]))
    assert run.records()["mcqa:rejected"].missing


def test_progress_reports_each_event_once_plain_and_live(tmp_path):
    out = io.StringIO()
    run = RunFolder(tmp_path)
    progress = Progress(run, total_paths=2, stream=out, tty=False)
    run.write_service_status(EnvStatus("mcqa", EnvState.STARTING, worker="gw0"))
    assert progress.poll() == ["starting mcqa (gw0)"]
    run.write_service_status(EnvStatus("mcqa", EnvState.READY, seconds=31.25, worker="gw0"))
    run.write_record(record("mcqa:accepted", "FAIL", reason="[reward] x"))
    assert progress.poll() == ["ready    mcqa (gw0) 31.2s", "FAIL     mcqa:accepted  [reward] x"]
    assert progress.poll() == []
    assert progress.footer().startswith("paths 1/2: 0 passed, 1 failed")
    tty = io.StringIO()
    with Progress(run, total_paths=2, stream=tty, tty=True, interval=0.05):
        pass
    assert "mcqa" in tty.getvalue() and "FAIL" in tty.getvalue()
    # A record once read is not parsed again at every poll (it cost a 143-path run more CPU than any Gym server):
    # the file damaged now is never read, the new one is.
    (run.paths_dir / "mcqa-accepted.json").write_text("{")
    run.write_record(record("mcqa:rejected", "PASS"))
    assert [line.split()[:2] for line in progress.poll()] == [["PASS", "mcqa:rejected"]]


def test_workers_linking_the_shared_venvs_at_once_do_not_collide(tmp_path):
    # Found in CI: two workers of one run reached link_venvs together and one died of FileExistsError.
    import threading

    from gymgate.services.fleet import link_venvs

    envs, errors = load_environments(None), []

    def link():
        try:
            link_venvs(tmp_path, Path("/usr"), envs)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=link) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (tmp_path / "resources_servers" / "mcqa" / ".venv").readlink() == Path("/usr")
    with pytest.raises(FileExistsError):  # a link to another environment is never silently kept
        link_venvs(tmp_path, Path("/opt"), envs)


def test_every_server_dir_a_gym_config_declares_gets_the_environment(tmp_path):
    """0.7.0's configs declare an environment server beside each resources server and agent: its dir is linked
    too, or Gym would build a venv for it (with the network off it cannot)."""
    from gymgate.services.fleet import link_venvs

    root = tmp_path / "gym"
    config = root / "resources_servers" / "mcqa" / "configs" / "mcqa.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "mcqa:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n"
        "mcqa_simple_agent:\n  responses_api_agents:\n    simple_agent:\n      entrypoint: app.py\n"
        "mcqa_environment_server:\n  environment_servers:\n    legacy_agent:\n      entrypoint: app.py\n"
        "not_a_server: {a: 1}\n"
    )
    (mcqa,) = [e for e in load_environments(None) if e.name == "mcqa"]
    link_venvs(tmp_path / "venvs", Path("/usr"), [mcqa], gym_root=root)
    linked = sorted(str(p.parent.relative_to(tmp_path / "venvs")) for p in (tmp_path / "venvs").rglob(".venv"))
    assert linked == [
        "environment_servers/legacy_agent",
        "resources_servers/mcqa",
        "responses_api_agents/simple_agent",
        "responses_api_models/vllm_model",
    ]
