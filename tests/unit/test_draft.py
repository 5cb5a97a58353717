"""Drafting a case (cases/draft.py): config and servers found in the Gym, the row pinned, scripts drafted from the
row's own answer or expected action, the observed values kept as expected only when the modes separate."""

from __future__ import annotations

import json
import tomllib

import pytest

from gymgate.cases.case import load_case
from gymgate.cases.draft import draft_case, draft_scripts, keep_scripts, observed_expect, render, separation
from gymgate.cases.named import load_environments
from gymgate.errors import UsageError
from gymgate.refs import resolve_ref
from gymgate.refs.distribution import Distribution
from tests.helpers import record, write_tree

CONFIG = """\
quiz:
  resources_servers:
    quiz_server:
      entrypoint: app.py
quiz_agent:
  responses_api_agents:
    simple_agent:
      resources_server:
        type: resources_servers
        name: quiz
      datasets:
      - name: example
        type: example
        jsonl_fpath: resources_servers/quiz_server/data/example.jsonl
"""


def _row(prompt: str, **fields) -> dict:
    return {"responses_create_params": {"input": [{"role": "user", "content": prompt}]}, **fields}


@pytest.mark.parametrize(
    ("row", "accepted", "rejected"),
    [
        (_row("Put it in \\boxed{}.", expected_answer="B"), "\\boxed{B}", "\\boxed{A}"),
        (_row("End with 'Answer: LETTER'.", answer="A"), "Answer: A", "Answer: B"),
        (_row("How many?", ground_truth=41), "41", "42"),
        (_row("Name him.", label="Darwin"), "Darwin", "gymgate-wrong-answer"),
    ],
)
def test_answers_are_written_as_the_prompt_asks(row, accepted, rejected):
    modes, problems = draft_scripts(row)
    assert problems == []
    assert modes["accepted"]["turns"] == [{"content": accepted}]
    assert modes["rejected"]["turns"] == [{"content": rejected}]


def test_an_expected_tool_call_is_made_and_then_changed():
    row = _row("Log in.", expected_action={"name": "login", "arguments": json.dumps({"user": "ann", "pin": 7})})
    modes, _ = draft_scripts(row)
    assert modes["accepted"]["turns"] == [{"tool_calls": [{"name": "login", "arguments": {"user": "ann", "pin": 7}}]}]
    assert modes["rejected"]["turns"] == [{"tool_calls": [{"name": "login", "arguments": {"user": "ann", "pin": 8}}]}]


def test_several_expected_calls_are_made_in_one_turn():
    calls = [{"name": "giveaways", "arguments": {"type": "beta"}}, {"name": "giveaways", "arguments": {"type": "game"}}]
    modes, _ = draft_scripts(_row("Find both.", expected_answers=calls))
    assert modes["accepted"]["turns"] == [{"tool_calls": calls}]
    wrong = modes["rejected"]["turns"][0]["tool_calls"]
    assert wrong[0]["arguments"] == {"type": "gymgate-wrong-answer"} and wrong[1] == calls[1]
    assert calls[0]["arguments"] == {"type": "beta"}  # the accepted call is not changed with it


def test_a_row_without_an_answer_leaves_the_scripts_to_a_person():
    _, problems = draft_scripts(_row("Chat."))
    assert problems and "write both modes' turns by hand" in problems[0]


def _gym(tmp_path, rows: int = 2):
    line = json.dumps(_row("Put it in \\boxed{}.", expected_answer="C")) + "\n"
    files = {
        "resources_servers/quiz_server/configs/quiz_server.yaml": CONFIG,
        "resources_servers/quiz_server/data/example.jsonl": line * rows,
    }
    return Distribution(resolve_ref(str(write_tree(tmp_path / "gym", "0.4.0", extra_files=files))))


def test_a_draft_names_config_servers_and_pinned_row_and_loads_as_a_case(tmp_path, monkeypatch):
    draft = draft_case(_gym(tmp_path), "quiz", "quiz_server", 1)
    assert (draft.config.server_key, draft.config.agent_key, draft.config.agent_type) == (
        "quiz",
        "quiz_agent",
        "simple_agent",
    )
    assert draft.row_file == "resources_servers/quiz_server/data/example.jsonl" and draft.line == 1
    text = render(draft, {"accepted": {"reward": 1.0}, "rejected": {"reward": 0.0}}, "review it")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "quiz.toml").write_text(text)
    monkeypatch.setenv("GYMGATE_CASES_DIR", str(cases))
    (env,) = load_environments()
    assert env.draft == "review it"
    case = load_case(env)
    assert case.modes["accepted"].expect == {"reward": 1.0}
    assert case.script("accepted").turns[0].content == "\\boxed{C}"
    assert tomllib.loads(text)["environment"]["server_dirs"] == [
        "resources_servers/quiz_server",
        "responses_api_agents/simple_agent",
    ]
    with pytest.raises(UsageError, match="has 2 rows"):
        draft_case(_gym(tmp_path / "again"), "quiz", "quiz_server", 2)
    with pytest.raises(UsageError, match="no config"):
        draft_case(_gym(tmp_path / "third"), "quiz", "nope", 0)


def test_the_verifier_s_own_fields_are_kept_and_the_row_s_echo_and_ids_are_not():
    made = record("quiz:accepted", "PASS")
    made.observe(
        [],
        {
            "reward": 1.0,
            "extracted": "C",
            "expected_answer": "C",
            "id": "resp_" + "a" * 32,
            "response": {"x": 1},
            "extra": {"nested": 1},
        },
    )
    assert observed_expect(made, {"expected_answer": "C"}) == {"reward": 1.0, "extracted": "C"}


def test_modes_that_do_not_separate_say_which():
    def made(mode, outcome, reward):
        got = record(f"quiz:{mode}", outcome, reward=reward, reason="" if outcome == "PASS" else "boom")
        return got

    assert separation({"accepted": made("accepted", "PASS", 1.0), "rejected": made("rejected", "PASS", 0.0)}) == []
    why = separation({"accepted": made("accepted", "PASS", 0.0), "rejected": made("rejected", "PASS", 0.0)})
    assert why == [
        "accepted earned reward 0.0, not the top reward 1.0",
        "rejected earned reward 0.0, not less than accepted (0.0)",
    ]
    why = separation({"accepted": made("accepted", "FAIL", 1.0), "rejected": made("rejected", "PASS", 0.0)})
    assert why == ["accepted did not run cleanly: FAIL — boom"]


def test_scripts_a_person_finished_are_kept_when_run_again(tmp_path):
    draft = draft_case(_gym(tmp_path), "quiz", "quiz_server", 0)
    finished = render(draft, {}, "to finish").replace(
        'content = "\\\\boxed{C}"', 'content = "\\\\boxed{C}", reasoning = "r"'
    )
    finished = finished.replace("server_dirs = [", 'judge_markers = ["GOLD:"]\nserver_dirs = [', 1)
    again = draft_case(_gym(tmp_path / "again"), "quiz", "quiz_server", 0)
    keep_scripts(again, finished)
    assert again.modes["accepted"]["turns"] == [{"content": "\\boxed{C}", "reasoning": "r"}]
    assert again.judge_markers == ["GOLD:"]
    assert tomllib.loads(render(again, {}, "x"))["environment"]["judge_markers"] == ["GOLD:"]


def test_another_turn_repeats_an_answer_and_closes_tool_calls(tmp_path):
    from gymgate.cases.draft import add_closing_turn

    draft = draft_case(_gym(tmp_path), "quiz", "quiz_server", 0)
    draft.modes["rejected"]["turns"] = [{"tool_calls": [{"name": "f", "arguments": {}}]}]
    assert add_closing_turn(draft) and add_closing_turn(draft)
    assert draft.modes["accepted"]["turns"] == [{"content": "\\boxed{C}"}] * 3  # a last-turn judge sees it too
    assert draft.modes["rejected"]["turns"][1:] == [{"content": "Done."}] * 2
    assert add_closing_turn(draft) and not add_closing_turn(draft)  # four turns at most
