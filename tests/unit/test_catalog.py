"""`gymgate cases list` (cases/catalog.py): a Gym's environments, their example data, gymgate's cases for them,
and what they declare that keeps them from running here; and drafted cases that no command judges until reviewed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from gymgate.cases.catalog import catalog
from gymgate.cases.environments import cases_dir, refuse_drafts
from gymgate.cases.named import load_environments
from gymgate.cli import main
from gymgate.refs import resolve_ref
from gymgate.refs.distribution import Distribution
from tests.helpers import write_tree

ROW = '{"responses_create_params": {"input": []}, "expected_answer": "B"}\n'
FILES = {
    "resources_servers/mcqa/configs/mcqa.yaml": "mcqa:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n",
    "resources_servers/mcqa/data/example.jsonl": ROW * 3,
    "resources_servers/mcqa/data/example_rollouts.jsonl": ROW * 9,  # outputs, not example rows
    "resources_servers/mcqa/requirements.txt": "-e nemo-gym[dev] @ ../../\ntiktoken\n",
    "resources_servers/judge_it/configs/j.yaml": "j:\n  resources_servers:\n    judge_it:\n      judge_model_server:\n",
    "resources_servers/judge_it/data/example.jsonl": ROW,
    "resources_servers/gpu/data/example.jsonl": ROW,
    "resources_servers/gpu/requirements.txt": "torch==2.12.0\nnumpy\n",
    "resources_servers/git_dep/data/example.jsonl": ROW,
    "resources_servers/git_dep/requirements.txt": "thing @ git+https://example.invalid/thing.git\n",
    "resources_servers/sandboxed/configs/s.yaml": "s:\n  resources_servers:\n    sandboxed:\n      sandbox_host: 127.0.0.1\n",
    "resources_servers/sandboxed/data/example.jsonl": ROW,
    "resources_servers/git_source/data/example.jsonl": ROW,
    "resources_servers/git_source/pyproject.toml": '[tool.uv.sources]\nlib = { git = "https://example.invalid/lib.git" }\n',
    "resources_servers/keyed/configs/k.yaml": "k:\n  resources_servers:\n    keyed:\n      api_key: ${oc.select:my_key,null}\n",
    "resources_servers/keyed/data/example.jsonl": ROW,
    "resources_servers/no_data/app.py": "",
    "environments/calendar/config.yaml": "calendar:\n  resources_servers:\n    calendar:\n      entrypoint: app.py\n",
    "environments/calendar/data/example.jsonl": ROW * 2,
    "resources_servers/calendar/app.py": "",
}


def test_each_environment_with_its_data_case_and_declared_blockers(tmp_path):
    tree = write_tree(tmp_path / "gym", "0.4.0", extra_files=FILES)
    found = {e.name: e for e in catalog(Distribution(resolve_ref(str(tree))))}
    assert sorted(found) == [
        *("calendar", "git_dep", "git_source", "gpu", "judge_it", "keyed", "mcqa", "no_data", "sandboxed")
    ]
    assert found["mcqa"].examples == {"resources_servers/mcqa/data/example.jsonl": 3}
    assert found["mcqa"].cases == ["mcqa"] and found["mcqa"].runnable
    assert found["calendar"].examples == {"environments/calendar/data/example.jsonl": 2}  # Gym 0.4's own folders
    assert found["calendar"].configs == ["environments/calendar/config.yaml"]
    assert found["judge_it"].runnable and "auxiliary model" in found["judge_it"].notes[0]
    assert found["gpu"].blockers == ["needs a GPU stack (torch==2.12.0)"]
    assert found["git_dep"].blockers[0].startswith("installs from outside the package index")
    assert found["sandboxed"].blockers == ["needs a code execution sandbox (configs set sandbox_host)"]
    assert found["no_data"].blockers == ["no example data"] and not found["no_data"].runnable
    assert found["git_source"].blockers[0].startswith("installs a dependency from a git repository")  # pyproject
    assert found["keyed"].blockers[0].startswith("needs an API key a run must supply")


def test_the_command_lists_a_pin_from_its_wheel():
    command = [sys.executable, "-m", "gymgate", "cases", "list", "--gym-ref", "0.2.1", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    listed = {e["name"]: e for e in json.loads(done.stdout)["environments"]}  # the JSON alone, on stdout
    assert listed["mcqa"]["cases"] == ["mcqa"] and listed["mcqa"]["runnable"]
    covered = {case for e in listed.values() for case in e["cases"]}
    assert covered >= {e.name for e in load_environments()}  # every default case maps to the Gym's own server folder


def test_a_drafted_case_is_refused_until_its_mark_is_removed(tmp_path, monkeypatch, capsys):
    cases = tmp_path / "cases"
    shutil.copytree(cases_dir(), cases)
    draft = cases / "mcqa.toml"
    draft.write_text(draft.read_text() + '\n[draft]\nwhy = "drafted by gymgate case new"\n')
    monkeypatch.setenv("GYMGATE_CASES_DIR", str(cases))
    for command in (["accept", "--gym-ref", "0.4.0"], ["matrix", "0.4.0"], ["bisect", "--good", "a", "--bad", "b"]):
        assert main([*command, "--runs-dir", str(tmp_path / "runs")]) == 2
        err = capsys.readouterr().err
        assert "unreviewed drafted case(s): mcqa" in err and str(draft) in err
    assert not (tmp_path / "runs").exists()  # refused before anything ran
    assert main(["cases", "list", "--gym-ref", "0.4.0"]) == 0
    assert "mcqa (draft)" in capsys.readouterr().out  # the list says which cases are unreviewed
    refuse_drafts(load_environments(["code_gen"]))  # leaving the draft out (--env) is fine
    draft.write_text(draft.read_text().split("\n[draft]")[0] + "\n")  # a person reviewed it and removed the mark
    refuse_drafts(load_environments())


def test_the_default_set_runs_unless_more_are_asked_for(tmp_path, monkeypatch, capsys):
    from gymgate.cases.environments import all_environments, environment_sets, names_asked

    cases = tmp_path / "cases"
    shutil.copytree(cases_dir(), cases)
    extra = (cases / "mcqa.toml").read_text().replace('name = "mcqa"', 'name = "mcqa_again"', 1)
    (cases / "mcqa_again.toml").write_text(extra)
    (cases / "sets.toml").write_text((cases / "sets.toml").read_text() + 'mine = ["mcqa_again"]\n')
    monkeypatch.setenv("GYMGATE_CASES_DIR", str(cases))
    default = [e.name for e in load_environments()]
    assert "mcqa_again" not in default and len(default) == 7
    assert "mcqa_again" in [e.name for e in all_environments()]
    assert [e.name for e in load_environments(["mcqa_again"])] == ["mcqa_again"]  # --env reaches any case
    assert names_asked(["mcqa"], "mine") == ["mcqa_again", "mcqa"]
    assert environment_sets()["mine"] == ["mcqa_again"]
    assert main(["accept", "--gym-ref", "0.4.0", "--env-set", "nope"]) == 2
    assert "unknown environment set 'nope'" in capsys.readouterr().err


def test_a_damaged_case_file_is_a_usage_error_naming_it(tmp_path, monkeypatch, capsys):
    cases = tmp_path / "cases"
    shutil.copytree(cases_dir(), cases)
    (cases / "broken.toml").write_text("[accepted]\nturns = [\n    { content = 'a',\n      reasoning = 'b' },\n]\n")
    monkeypatch.setenv("GYMGATE_CASES_DIR", str(cases))
    assert main(["accept", "--gym-ref", "0.4.0"]) == 2
    assert f"{cases / 'broken.toml'} is not valid TOML" in capsys.readouterr().err
