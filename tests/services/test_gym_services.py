"""The real Gym services of every acceptance environment start from the pin's environment, answer,
and stop, leaving nothing running; failures and interrupts stay contained."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from gymgate.cases.environments import MODEL_CONFIG, cases_dir
from gymgate.cases.named import load_environments
from gymgate.processes import alive
from gymgate.services import gym_compat

STRUCTURED_FIRST_PIN = (0, 3, 0)


def _version(pin: str) -> tuple[int, ...]:
    return tuple(int(p) for p in pin.split("."))


def test_all_seven_environments_start_answer_and_stop(gym_pin, up_run):
    run = up_run()
    code = run.wait()
    record = run.record()
    output = "\n".join(run.lines)
    envs = record["environments"]
    assert record["complete"] is True, output
    assert sorted(envs) == sorted(e.name for e in load_environments())

    expected_skips = {"structured_outputs_v4"} if _version(gym_pin) < STRUCTURED_FIRST_PIN else set()
    for env in load_environments():
        status = envs[env.name]
        if env.name in expected_skips:
            assert status["status"] == "skipped"
            assert f"not in nemo-gym {gym_pin}" in status["reason"]
            continue
        assert status["status"] == "ready", f"{env.name}: {status['reason']}\n{output}"
        servers = {s["name"]: s for s in status["servers"]}
        # Each Gym instance: every server its config declares (its resources server, its agent, the policy model
        # server; from 0.7.0 also an environment server) and the head server.
        declared = {name for name, _, _ in gym_compat.config_servers(env.config, MODEL_CONFIG)}
        assert {env.resources_server, env.agent, "policy_model"} <= declared
        assert set(servers) == declared | {"head_server"}
        for server in servers.values():
            assert server["host"] == "127.0.0.1"
            assert server["http_status"] is not None, server  # every server answered over HTTP
            assert server["pid"]
        # 0.2.x answers `GET /` with 404, 0.3.0+ has a liveness route.
        agent_status = servers[env.agent]["http_status"]
        assert agent_status == (404 if _version(gym_pin) < STRUCTURED_FIRST_PIN else 200)

    assert code == 0, output
    pids = [s["pid"] for e in envs.values() for s in e["servers"]]
    started = [e for e in load_environments() if e.name not in expected_skips]
    assert len(pids) == sum(len(gym_compat.config_servers(e.config, MODEL_CONFIG)) + 1 for e in started)
    assert len(pids) >= 4 * len(started)  # at least resources server, agent, model server and head each
    assert not [p for p in pids if alive(p)], "Gym processes outlived the run"
    assert run.leftovers() == []


def test_a_failing_environment_fails_alone(gym_pin, up_run, tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    shutil.copy(cases_dir() / "mcqa.toml", cases)
    broken = (
        (cases_dir() / "mcqa.toml")
        .read_text()
        .replace(
            '[environment]\nname = "mcqa"',
            '[environment]\nname = "mcqa_broken"\n'
            'overrides = { "mcqa.resources_servers.mcqa.entrypoint" = "no_such_app.py" }',
        )
    )
    assert "no_such_app.py" in broken
    (cases / "mcqa_broken.toml").write_text(broken)

    run = up_run(extra_env={"GYMGATE_CASES_DIR": str(cases)})
    code = run.wait()
    envs = run.record()["environments"]
    output = "\n".join(run.lines)
    assert code == 1, output
    assert envs["mcqa"]["status"] == "ready", output
    assert envs["mcqa_broken"]["status"] == "failed"
    assert "finished unexpectedly" in envs["mcqa_broken"]["reason"]
    assert "no_such_app.py" in Path(envs["mcqa_broken"]["log"]).read_text()
    assert run.leftovers() == []


def test_interrupt_during_startup_stops_everything(gym_pin, up_run):
    run = up_run(envs=["mcqa", "workplace_assistant"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = run.proc.stdout.readline()
        run.lines.append(line)
        if "starting 2 environments" in line:
            break
    # Stop it as soon as its Gyms are being spawned (more than Ray's own daemons): a fixed sleep here outlasted a
    # whole start-up on a fast machine (session 15's fresh-clone CI: 1 process left after 6 s).
    deadline = time.monotonic() + 120
    while len(run.leftovers()) <= 5 and run.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(run.leftovers()) > 5, "the run should have Ray and Gym processes by now"
    run.proc.send_signal(signal.SIGINT)
    began = time.monotonic()
    code = run.wait(timeout=120)
    output = "\n".join(run.lines)
    assert code == 130, output
    assert time.monotonic() - began < 60
    assert "interrupted" in output
    assert run.record()["complete"] is False
    assert run.leftovers() == []
    assert os.path.exists(run.run_dir / "services.json")


def test_gyms_readiness_checks_are_shortened_only_while_it_starts():
    """Every pin's RunHelper sleeps 3 s between readiness checks through its module's `sleep`: gymgate shortens that
    wait while `start` runs (gym_compat.readiness_polled_often) and gives the module its own `sleep` back after."""
    run_helper_cls, _ = gym_compat.run_helper_api()
    module = sys.modules[run_helper_cls.__module__]
    with gym_compat.readiness_polled_often(run_helper_cls) as applied:
        began = time.monotonic()
        module.sleep(3)
        waited = time.monotonic() - began
    assert applied, f"{module.__name__} waits without `sleep`: its readiness checks stay 3 s apart"
    assert waited < 1.0
    assert module.sleep is time.sleep
