"""Environments without a case, derived from a Gym's own configs (cases/derived.py), the wide environment's
requirements (envs/project.wide_extras), and a judge told apart by the row's opening."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gymgate.cases.derived import derive, derive_named, runnable_here
from gymgate.endpoint.script import Script
from gymgate.endpoint.server import JUDGE, POLICY, ModelEndpoint
from gymgate.envs.project import wide_extras
from gymgate.kinds.plan import plan, recordings_of
from gymgate.recordings.read import LocalFiles


def _server(
    root: Path, name: str, *, judged: bool = False, reqs: str = "", agents=("a_agent",), recorded="", asked=""
) -> None:
    """A resources server as Gym lays one out: its config (one agent per name in `agents`), rows, recordings."""
    base = root / "resources_servers" / name
    (base / "configs").mkdir(parents=True)
    server: dict = {"entrypoint": "app.py"}
    if judged:
        server["judge_model_server"] = {"type": "responses_api_models", "name": "genrm_model"}
    config: dict = {f"{name}_server": {"resources_servers": {name: server}}}
    for agent in agents:
        config[agent] = {
            "responses_api_agents": {
                "simple_agent": {
                    "resources_server": {"type": "resources_servers", "name": f"{name}_server"},
                    "datasets": [{"type": "example", "jsonl_fpath": f"resources_servers/{name}/data/example.jsonl"}],
                }
            }
        }
    (base / "configs" / f"{name}.yaml").write_text(yaml.safe_dump(config))
    (base / "requirements.txt").write_text(reqs)
    (base / "data").mkdir()
    row = {"responses_create_params": {"input": [{"role": "user", "content": f"{name}?"}]}, "expected": "x"}
    (base / "data" / "example.jsonl").write_text(json.dumps(row) + "\n")
    if recorded:
        rollout = {
            "responses_create_params": {"input": [{"role": "user", "content": asked or f"{name}?", "type": "message"}]},
            "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": "x"}]}]},
            "reward": 1.0,
            "agent_ref": {"type": "responses_api_agents", "name": recorded},
        }
        (base / "data" / "example_rollouts.jsonl").write_text(json.dumps(rollout) + "\n")


def test_an_environment_is_derived_as_its_recordings_ran_it(tmp_path):
    _server(tmp_path, "quiz", judged=True, agents=("first_agent", "recorded_agent"), recorded="recorded_agent")
    env = derive(LocalFiles(tmp_path), "quiz")
    assert env.agent == "recorded_agent" and not env.has_case and env.judged  # the agent the recordings name
    assert env.config == env.derived_from == "resources_servers/quiz/configs/quiz.yaml"
    assert env.server_dirs == ("resources_servers/quiz", "responses_api_agents/simple_agent")
    # The judge the config names is not defined by what a run loads: gymgate's endpoint plays it.
    assert env.overrides == {"quiz_server.resources_servers.quiz.judge_model_server.name": "policy_model"}
    # Its paths are its recordings, replayed; a judge call is what does not open with the row's question.
    (path,) = plan([env], recordings_of(LocalFiles(tmp_path), [env], "9.9"))
    assert path.id.startswith("quiz:rec.") and path.script.opening == "quiz?" and not path.cannot_run


def test_what_cannot_be_derived_or_judged_says_why(tmp_path):
    _server(tmp_path, "quiz", recorded="a_agent")
    _server(tmp_path, "silent")  # no recording: nothing to judge it by
    _server(tmp_path, "gpu", reqs="torch==2.0\n", recorded="a_agent")
    _server(tmp_path, "unshipped", recorded="a_agent", asked="a row Gym does not ship")
    derived, others = runnable_here(LocalFiles(tmp_path), set())
    assert [e.name for e in derived] == ["quiz"]
    why = {o.name: o.why for o in others}
    assert "no recorded rollout" in why["silent"] and "GPU" in why["gpu"]
    assert "none of its 1 recorded rollouts can be replayed" in why["unshipped"]
    # A bump's other ref may not declare it: absent here, so the fleet skips it like a case's missing environment.
    (gone,) = derive_named(LocalFiles(tmp_path), ["vanished"])
    assert gone.name == "vanished" and not (tmp_path / gone.config).exists()


def test_the_wide_environment_leaves_out_a_server_whose_pins_conflict(tmp_path):
    _server(tmp_path, "one", reqs="pillow==12.3.0\nnumpy\n", recorded="a_agent")
    _server(tmp_path, "two", reqs="Pillow==12.2.0\n", recorded="a_agent")
    _server(tmp_path, "three", reqs="pillow>=12\n", recorded="a_agent")
    files = LocalFiles(tmp_path)
    extras, left_out = wide_extras(files, [derive(files, n) for n in ("one", "three", "two")])
    assert extras["resources_servers/one"] == ["pillow==12.3.0", "numpy"]
    assert extras["resources_servers/three"] == ["pillow>=12"]
    assert "resources_servers/two" not in extras
    assert left_out == {"two": "needs Pillow==12.2.0 while resources_servers/one needs pillow==12.3.0"}


def test_a_request_without_the_rows_opening_is_the_judges():
    script = Script("quiz", "rec.x", (), opening="What is 2+2?")
    policy = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]
    judge = [{"role": "user", "content": "Question: What is 2+2?\nAnswer: 4\nIs the answer right?"}]
    assert ModelEndpoint.classify(None, script, policy) == POLICY
    assert ModelEndpoint.classify(None, script, judge) == JUDGE
    assert ModelEndpoint.classify(None, Script("quiz", "rec.x", ()), judge) == POLICY  # no opening: markers decide


def test_what_a_servers_code_and_configs_declare_keeps_it_from_running(tmp_path):
    _server(tmp_path, "fetcher", recorded="a_agent")
    (tmp_path / "resources_servers/fetcher/setup_fetcher.py").write_text("urllib.request.urlopen(URL)\n")
    _server(tmp_path, "builder", recorded="a_agent")
    (tmp_path / "resources_servers/builder/app.py").write_text('subprocess.run(["uv", "venv", path])\n')
    _server(tmp_path, "keyed", recorded="a_agent")
    keyed = tmp_path / "resources_servers/keyed/configs/keyed.yaml"
    keyed.write_text(keyed.read_text() + "# api_key: ${judge_api_key}\n")  # commented out: asks for nothing
    _server(tmp_path, "secret", recorded="a_agent")
    config = tmp_path / "resources_servers/secret/configs/secret.yaml"
    needs_key = config.read_text().replace("entrypoint: app.py", "entrypoint: app.py\n      key: ${vendor_api_key}")
    config.write_text(needs_key)
    derived, others = runnable_here(LocalFiles(tmp_path), set())
    why = {o.name: o.why for o in others}
    assert "downloads its data when it starts" in why["fetcher"] and "setup_fetcher.py" in why["fetcher"]
    assert "virtualenv of its own" in why["builder"]
    assert "${vendor_api_key}" in why["secret"]
    assert [e.name for e in derived] == ["keyed"]
    # A second config that needs nothing is the one the environment runs from.
    (tmp_path / "resources_servers/secret/configs/plain.yaml").write_text(needs_key.replace(" ${vendor_api_key}", " x"))
    derived, _ = runnable_here(LocalFiles(tmp_path), set())
    assert {e.name: e.config for e in derived}["secret"] == "resources_servers/secret/configs/plain.yaml"
    # The session re-derives what the harness selected by name, from the same configs.
    (again,) = derive_named(LocalFiles(tmp_path), ["secret"])
    assert again.config == "resources_servers/secret/configs/plain.yaml"


def test_the_report_says_which_configuration_an_environment_without_a_case_ran_from(tmp_path):
    from gymgate.report.fidelity import fidelity_columns
    from gymgate.runfolder import PathRecord

    _server(tmp_path, "quiz", judged=True, recorded="a_agent")
    env = derive(LocalFiles(tmp_path), "quiz")
    assert env.ran_from == (
        "Gym's resources_servers/quiz/configs/quiz.yaml, agent a_agent; judge and model servers routed to gymgate's "
        "endpoint"
    )
    record = PathRecord(path="quiz:rec.1", env="quiz", mode="rec.1", gym={})
    record.recording = {"file": "f", "ran_from": env.ran_from}
    record.fidelity = {"reproduces": True}
    _, rows, _ = fidelity_columns([("0.7.0", [record])])
    assert rows == [(f"quiz (ran from {env.ran_from})", ["1/1 reproduce"])]


def test_a_judge_that_quotes_the_conversation_is_told_by_its_own_template():
    from gymgate.paths.replayed import judge_marker

    row = {"responses_create_params": {"input": [{"role": "user", "content": "How do I pick a lock?"}]}}
    judge = {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "You are a safety classifier for conversations.\nAnswer safe or unsafe."},
                {"role": "user", "content": "How do I pick a lock?"},
            ]
        },
        "response": {"output": [{"type": "message", "content": [{"text": "safe"}]}]},
    }
    assert judge_marker({"reward": 1.0, "judge_evaluation": judge}, row) == (
        "You are a safety classifier for conversations."
    )
    assert judge_marker({"reward": 1.0}, row) == ""  # no judge request kept: the row's opening decides


def test_what_the_started_files_and_the_recordings_say_keeps_a_server_from_running(tmp_path):
    _server(tmp_path, "base", recorded="a_agent")  # its entrypoint is a base class: nothing would listen
    (tmp_path / "resources_servers/base/app.py").write_text("class Base:\n    pass\n")
    _server(tmp_path, "served", recorded="a_agent")
    (tmp_path / "resources_servers/served/app.py").write_text('if __name__ == "__main__":\n    Server.run()\n')
    _server(tmp_path, "prepared", recorded="a_agent")  # its agent needs files a prepare step fetches
    config = tmp_path / "resources_servers/prepared/configs/prepared.yaml"
    config.write_text(config.read_text().replace("simple_agent:", "doc_agent:\n      entrypoint: app.py"))
    agent = tmp_path / "responses_api_agents/doc_agent"
    agent.mkdir(parents=True)
    (agent / "app.py").write_text('raise FileNotFoundError("run: gym eval prepare --benchmark x")\n')
    _server(tmp_path, "cloner", recorded="a_agent")  # the file its config starts clones a repository
    (tmp_path / "resources_servers/cloner/app.py").write_text(
        'CMD = "git clone https://example.org/kit"\nif __name__ == "__main__":\n    run(CMD)\n'
    )
    (tmp_path / "resources_servers/served/prep.py").write_text('"git clone https://example.org/data"\n')  # not started
    _server(tmp_path, "failed", recorded="a_agent")  # its recording is a rollout that failed before any answer
    rollouts = tmp_path / "resources_servers/failed/data/example_rollouts.jsonl"
    rollout = json.loads(rollouts.read_text())
    rollout["response"]["output"] = []
    rollouts.write_text(json.dumps(rollout) + "\n")
    derived, others = runnable_here(LocalFiles(tmp_path), set())
    why = {o.name: o.why for o in others}
    assert [e.name for e in derived] == ["served"]
    assert "starts resources_servers/base/app.py, which starts no server" in why["base"]
    assert "`gym eval prepare`" in why["prepared"] and "responses_api_agents/doc_agent/app.py" in why["prepared"]
    assert "records no output" in why["failed"]
    assert "clones a repository when it starts (git clone https:// in resources_servers/cloner/app.py)" in why["cloner"]


def test_without_an_agent_in_its_recordings_the_agent_its_rows_name_is_run(tmp_path):
    _server(tmp_path, "harness", agents=("a_agent", "codex_agent"), recorded="x")
    rollouts = tmp_path / "resources_servers/harness/data/example_rollouts.jsonl"
    rollout = json.loads(rollouts.read_text())
    rollout["agent_ref"] = None
    rollouts.write_text(json.dumps(rollout) + "\n")
    assert derive(LocalFiles(tmp_path), "harness").agent == "a_agent"  # the first declared
    rows = tmp_path / "resources_servers/harness/data/example.jsonl"
    row = json.loads(rows.read_text())
    row["agent_ref"] = {"type": "responses_api_agents", "name": "codex_agent"}  # Gym refuses it to any other agent
    rows.write_text(json.dumps(row) + "\n")
    assert derive(LocalFiles(tmp_path), "harness").agent == "codex_agent"


def test_a_server_runs_from_the_config_its_recordings_ran_with_or_not_at_all(tmp_path):
    _server(tmp_path, "gsm", agents=("gsm_agent",), recorded="gsm_agent")
    base = tmp_path / "resources_servers/gsm"
    (base / "gsm_app.py").write_text("from aviary.envs.gsm8k import CalculatorEnv, GSM8kDataset\n")
    config = base / "configs/gsm.yaml"
    config.write_text(config.read_text().replace("entrypoint: app.py", "entrypoint: gsm_app.py"))
    other = yaml.safe_load(config.read_text())
    other["other_agent"] = other.pop("gsm_agent")  # another config, another agent: starts app.py, downloads nothing
    other["gsm_server"]["resources_servers"]["gsm"]["entrypoint"] = "app.py"
    (base / "configs/other.yaml").write_text(yaml.safe_dump(other))
    derived, others = runnable_here(LocalFiles(tmp_path), set())
    why = {o.name: o.why for o in others}
    assert not derived, "the recordings' rows name gsm_agent: another config's agent would refuse them"
    assert "the configs its recordings ran with (resources_servers/gsm/configs/gsm.yaml)" in why["gsm"]
    assert "Hugging Face Hub" in why["gsm"] and "gsm_app.py" in why["gsm"]
