"""Recorded rollouts: read from a Gym's files, keyed by content, made into paths, compared with their replays."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gymgate.cases.named import load_environments
from gymgate.compare.observation import ABSENT
from gymgate.kinds.plan import ids, plan, union
from gymgate.pathid import PathId
from gymgate.paths.replayed import judge_texts, model_turns, replay_path
from gymgate.recordings import fidelity
from gymgate.recordings.read import LocalFiles, Recording, content_key, read_recordings
from gymgate.report.fidelity import fidelity_lines
from gymgate.report.grouping import describe_paths
from gymgate.runfolder import PathRecord
from tests.helpers import write_tree

DATA = "resources_servers/quiz/data"


def _row(question: str, answer: str) -> dict:
    return {"responses_create_params": {"input": [{"role": "user", "content": question}]}, "expected_answer": answer}


def _recording(question: str, text: str, reward: float, **extra) -> dict:
    """What Gym writes: the request as its model dumps it (typed items, nulls), the response, the verdict."""
    return {
        "responses_create_params": {"input": [{"content": question, "role": "user", "type": "message"}], "top_p": None},
        "response": {
            "id": "resp_" + "a" * 32,
            "output": [
                {"type": "reasoning", "id": "rs_" + "b" * 32, "summary": [{"type": "summary_text", "text": "think"}]},
                {"type": "message", "id": "msg_" + "c" * 32, "content": [{"type": "output_text", "text": text}]},
            ],
        },
        "reward": reward,
        **extra,
    }


@pytest.fixture
def gym(tmp_path: Path) -> LocalFiles:
    data = tmp_path / DATA
    data.mkdir(parents=True)
    rows = [_row("2+2?", "4"), _row("3+3?", "6")]
    (data / "example.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recordings = [
        _recording("3+3?", "\\boxed{6}", 1.0, expected_answer="6", _ng_task_index=1),
        "not json {",
        _recording("never shipped?", "\\boxed{1}", 0.0),
    ]
    lines = [r if isinstance(r, str) else json.dumps(r) for r in recordings]
    (data / "example_rollouts.jsonl").write_text("\n".join(lines) + "\n")
    return LocalFiles(tmp_path)


def test_recordings_are_read_with_the_row_they_were_made_on_and_keyed_by_content(gym):
    found = read_recordings(gym, "quiz", DATA, gym="0.7.0")
    assert [r.line for r in found] == [0, 2]  # the line that is not JSON is not a recording
    first, unshipped = found
    assert first.row == _row("3+3?", "6") and (first.row_file, first.row_line) == (f"{DATA}/example.jsonl", 1)
    assert first.unreplayable == "" and "not in the data this Gym ships" in unshipped.unreplayable
    # Gym's bookkeeping keys (0.7.0 adds them to old recordings) do not change a recording's identity.
    bare = {k: v for k, v in first.recorded.items() if k != "_ng_task_index"}
    assert content_key(bare) == first.key and content_key({**bare, "reward": 0.0}) != first.key


def _seen(image: str, words: str = "How many circles?", metadata: dict | None = None) -> dict:
    parts = [{"type": "input_image", "image_url": image}, {"type": "input_text", "text": words}]
    return {"input": [{"role": "user", "content": parts}], **({"metadata": metadata} if metadata else {})}


def test_rows_that_ask_the_same_words_about_other_images_or_audio_are_other_rows(tmp_path):
    data = tmp_path / DATA
    data.mkdir(parents=True)
    rows = [
        {"responses_create_params": _seen("data:image/png;base64,AAA"), "n": 3},
        {"responses_create_params": _seen("data:image/png;base64,BBB"), "n": 1},
        {"responses_create_params": _seen("x", metadata={"audio_data": "wav-1"}), "n": 5},
        {"responses_create_params": _seen("x", metadata={"audio_data": "wav-2"}), "n": 6},
    ]
    (data / "example.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    dumped = {"detail": "auto", "type": "input_image"}  # what Gym's model adds when it dumps a part
    recordings = []
    for image, metadata, n in (("BBB", None, 1), ("CCC", None, 2), ("x", {"audio_data": "wav-2"}, 0)):
        params = _seen(image if image == "x" else f"data:image/png;base64,{image}", metadata=metadata)
        params["input"][0]["content"][0] |= dumped
        recordings.append({"responses_create_params": params, "response": {"output": []}, "reward": 1.0, "m": n})
    (data / "example_rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recordings))
    found = read_recordings(LocalFiles(tmp_path), "quiz", DATA, gym="0.7.0")
    assert [r.row and r.row["n"] for r in found] == [1, None, 6]  # the image it was shown; none shows CCC


def test_rows_alike_in_all_the_model_saw_are_told_apart_by_gyms_task_index(tmp_path):
    data = tmp_path / DATA
    data.mkdir(parents=True)
    rows = [{**_row("Transcribe.", answer), "sample": n} for n, answer in enumerate(("Hello.", "Mr. Smith."))]
    (data / "example.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recordings = [
        _recording("Transcribe.", "mister smith", 0.0, _ng_task_index=1),
        _recording("Transcribe.", "hi", 1.0),
    ]
    (data / "example_rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recordings))
    found = read_recordings(LocalFiles(tmp_path), "quiz", DATA, gym="0.7.0")
    assert [r.row["sample"] for r in found] == [1, 0]  # task 1 is the second row; without an index, the first


def test_a_recording_becomes_a_path_whose_script_and_expectations_are_the_recordings(gym):
    (env,) = [e for e in load_environments(["mcqa"])]
    recording = read_recordings(gym, "mcqa", DATA, gym="0.7.0")[0]
    path = replay_path(env, recording)
    assert path.id == PathId.of("mcqa", f"rec.{recording.key}") and PathId(path.id).stem == f"mcqa-rec.{recording.key}"
    assert [(t.reasoning, t.content) for t in path.script.turns] == [("think", "\\boxed{6}")]
    assert path.script.recorded and path.expect == {"reward": 1.0}
    assert path.recorded.fields == {"reward": 1.0, "expected_answer": "6"}  # bookkeeping keys are not Gym's verdict
    assert path.metadata == {"expected_answer": "returned"}
    assert path.row.data == recording.row and path.row.transforms == ("add_agent_ref",)


def test_a_plan_is_each_environments_case_paths_then_its_replays_and_a_union_keeps_each_content_once(gym):
    envs = load_environments(["mcqa"])
    mine = read_recordings(gym, "mcqa", DATA, gym="0.7.0")
    older = read_recordings(gym, "mcqa", DATA, gym="0.6.0")
    both = union(mine, older)
    assert [r.gym for r in both] == ["0.7.0", "0.7.0"]  # the first ref's copy
    shipped = [replace(mine[1], gym="0.2.0", row={"responses_create_params": {}})]
    assert [r.gym for r in union(mine, shipped)] == ["0.7.0", "0.2.0"]  # … unless only another ref ships its row
    planned = ids(plan(envs, both))
    assert planned[:2] == ["mcqa:accepted", "mcqa:rejected"]
    assert sorted(planned[2:]) == sorted(f"mcqa:rec.{r.key}" for r in mine)


def test_model_turns_split_where_gym_answered_the_calls_and_judge_texts_are_in_order():
    items = [
        {"type": "reasoning", "summary": []},
        {"type": "message", "content": [{"type": "output_text", "text": "\n\n"}]},
        {"type": "function_call", "name": "search", "arguments": '{"q": "x"}', "call_id": "call_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": "[1]"},
        {"type": "function_call", "name": "open", "arguments": '{"id":1}', "call_id": "call_2"},
        {"type": "function_call_output", "call_id": "call_2", "output": "ok"},
        {"type": "message", "content": [{"type": "output_text", "text": "done"}]},
    ]
    turns = model_turns(items)
    assert [(t.content, [(c.name, c.arguments) for c in t.tool_calls]) for t in turns] == [
        ("\n\n", [("search", '{"q": "x"}')]),
        ("", [("open", '{"id":1}')]),
        ("done", []),
    ]
    # A multi-turn environment answers the model with a message of its own: a turn ends there too.
    talk = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "H2O"}]},
        {"type": "message", "role": "user", "content": "How many hydrogen atoms?"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "2"}]},
    ]
    assert [t.content for t in model_turns(talk)] == ["H2O", "2"]
    said = {"output": [{"type": "message", "content": [{"text": "[[A=B]]"}]}]}
    judged = {
        "judge_evaluations": [
            {"responses_create_params": {}, "response": said},
            {"responses_create_params": {}, "response": None},
        ]
    }
    assert judge_texts(judged) == ["[[A=B]]", ""] and judge_texts({"reward": 1.0}) == []
    # Wherever a server keeps its judge's exchanges (arena: games[*]), in order; a bare verdict text as a last resort.
    games = {"games": [{"responses_create_params": {}, "response": said, "verdict": "A>B"}], "response": {"output": []}}
    assert judge_texts(games) == ["[[A=B]]"]
    assert judge_texts({"judge_output": "CORRECT", "reward": 1.0}) == ["CORRECT"]
    rubric = {"rubric_evaluations": [{"judge_response": "PASS 1"}, {"judge_response": "FAIL 2", "score": 0.0}]}
    assert judge_texts({**rubric, "reward": 0.5}) == ["PASS 1", "FAIL 2"]  # one judge call per rubric, in order


def test_divergences_ignore_only_what_volatile_declares():
    recorded = {
        "reward": 1,
        "metadata": {"execution time": 0.06, "output": "1\n"},
        "judge_evaluations": [
            {
                "responses_create_params": {"input": [{"content": "grade", "role": "user"}], "model": None},
                "response": {"id": "resp_" + "d" * 32, "model": "gpt-4o", "output": [{"content": [{"text": "A=B"}]}]},
            }
        ],
    }
    replayed = {
        "reward": 1.0,
        "metadata": {"execution time": 0.5, "output": "1\n"},
        "judge_evaluations": [
            {
                "responses_create_params": {"input": [{"content": "grade", "role": "user", "phase": None}]},
                "response": {"id": "resp_" + "e" * 32, "model": "policy", "output": [{"content": [{"text": "A=B"}]}]},
            }
        ],
    }
    assert fidelity.divergences(recorded, replayed, ("ok",), ["ok"], (1, 1)) == []
    kept = fidelity.comparable(replayed, recorded)  # what a record keeps: no id, no timestamp, no run time
    assert kept["judge_evaluations.0.response.output.0.content.0.text"] == "A=B"
    assert kept["metadata.execution time"] == "<duration>" and not any(k.endswith(".id") for k in kept)
    replayed["judge_evaluations"][0]["response"]["output"][0]["content"][0]["text"] = "A!=B"
    replayed["metadata"]["output"] = "2\n"
    found = fidelity.divergences(recorded, replayed, ("ok",), ["changed", "extra"], (1, 0))
    assert [(d.field, d.recorded, d.replayed) for d in found] == [
        ("judge_calls", 1, 0),
        ("metadata.output", "1\n", "2\n"),
        ("judge_evaluations.0.response.output.0.content.0.text", "A=B", "A!=B"),
        ("tool_outputs.0", "ok", "changed"),
        ("tool_outputs.1", ABSENT, "extra"),
    ]
    # A field the verifier no longer returns is one divergence, named by its field; JSON tool outputs agree by value.
    del replayed["metadata"]
    found = fidelity.divergences(recorded, replayed, ('{"a": 1}',), ['{"a":1}'], (1, 1))
    assert [(d.field, d.recorded, d.replayed) for d in found] == [
        ("metadata.execution time", "<duration>", ABSENT),
        ("metadata.output", "1\n", ABSENT),
        ("judge_evaluations.0.response.output.0.content.0.text", "A=B", "A!=B"),
    ]


def test_a_classification_covers_only_its_fields_its_gyms_and_only_with_a_reason():
    found = [fidelity.Divergence("reward", 0.0, 1.0), fidelity.Divergence("extracted_answer", None, "C")]
    entry = fidelity.Entry("mcqa:rec.1", "verifier-changed", ("reward", "extracted_answer"), "why", ("0.7.0",))
    assert entry.covers("mcqa:rec.1", "0.7.0", found)
    assert not entry.covers("mcqa:rec.1", "0.4.0", found)  # another Gym
    assert not entry.covers("mcqa:rec.2", "0.7.0", found)  # another path
    assert not entry.covers("mcqa:rec.1", "0.7.0", [*found, fidelity.Divergence("judge_calls", 1, 0)])
    assert not fidelity.Entry("mcqa:rec.1", "verifier-changed", ("reward", "extracted_answer"), " ").covers(
        "mcqa:rec.1", "0.7.0", found
    )
    assert entry.masks == ()  # only Gym's own nondeterminism is masked across attempts and refs
    noisy = fidelity.Entry("m:rec.1", fidelity.NONDETERMINISTIC, ("reward", "judge_calls"), "why")
    assert noisy.masks == ("reward",)


def test_a_reviewed_shape_without_fields_makes_a_recording_unreplayable_with_its_reason(tmp_path, monkeypatch):
    file = tmp_path / "fidelity.toml"
    file.write_text(
        '[[entry]]\npath = "scicode:rec.*"\nclass = "cannot-replay"\ngyms = ["0.7.0"]\n'
        'reason = "The recordings hold one model call. More after."\n'
        '[[entry]]\npath = "mcqa:rec.*"\nclass = "verifier-changed"\nreason = "fields missing: not a shape"\n'
    )
    monkeypatch.setattr(fidelity, "fidelity_file", lambda: file)
    assert fidelity.unreplayable_shape("scicode:rec.0a1b2c3d4e", "0.7.0").reason.startswith("The recordings")
    assert fidelity.unreplayable_shape("scicode:rec.0a1b2c3d4e", "0.6.0") is None  # not reviewed on that Gym
    assert fidelity.unreplayable_shape("mcqa:rec.0a1b2c3d4e", "0.7.0") is None  # only the two classes say so
    recording = Recording("scicode", "0a1b2c3d4e", "0.7.0", "f", 0, "s", {"response": {}}, row={"x": 1})
    assert recording.unreplayable == "The recordings hold one model call (cases/recordings/fidelity.toml)"


def test_one_classification_can_name_every_recording_of_an_environment_by_a_glob():
    found = [fidelity.Divergence("reward", 0.0, 1.0)]
    entry = fidelity.Entry("scicode:rec.*", "cannot-replay", ("reward",), "why")
    assert entry.covers("scicode:rec.0a1b2c3d4e", "0.7.0", found)
    assert not entry.covers("scicode:accepted", "0.7.0", found)  # a hand-written path is never a recording's
    assert not entry.covers("scicodepile:rec.0a1b2c3d4e", "0.7.0", found)


def test_the_committed_classifications_parse_name_real_classes_and_give_reasons():
    entries = fidelity.entries()
    assert entries, "cases/recordings/fidelity.toml classifies the divergences measured on the releases"
    for entry in entries:
        assert PathId(entry.path).mode.startswith("rec.") and entry.reason.strip()
        assert entry.fields or entry.kind in ("cannot-replay", "needs-service")  # without fields: not replayed at all
        assert entry.kind in fidelity.CLASSES
        # verifier-changed names the Gym commit, or (history at hand short of it) the release that first ships it
        assert bool(entry.commit or entry.since) == (entry.kind == "verifier-changed")


def test_an_unknown_class_is_refused(tmp_path):
    bad = tmp_path / "fidelity.toml"
    bad.write_text('[[entry]]\npath = "mcqa:rec.1"\nclass = "flaky"\nfields = ["reward"]\nreason = "x"\n')
    with pytest.raises(Exception, match="not one of"):
        fidelity.entries(bad)


def test_fidelity_is_shown_per_environment():
    def record(path: str, fidelity_: dict) -> PathRecord:
        made = PathRecord.stub(path, "PASS", "")
        made.recording, made.fidelity = ({"gym": "0.7.0"} if "unreplayable" not in fidelity_ else {}), fidelity_
        return made

    records = [
        record("mcqa:rec.1", {"reproduces": True}),
        record("mcqa:rec.2", {"reproduces": False, "classified": {"class": "verifier-changed"}}),
        record("mcqa:rec.3", {"reproduces": False, "divergences": []}),
        record("wa:rec.4", {"reproduces": False, "unreplayable": "row not shipped"}),
        PathRecord.stub("mcqa:accepted", "PASS", ""),
    ]
    assert fidelity_lines(records) == [
        "mcqa: 1/3 reproduce (1 unexplained, 1 verifier-changed)",
        "wa: 0/1 reproduce (1 not replayable here)",
    ]


def test_replayed_paths_are_named_by_shape():
    universe = [
        *(f"mcqa:{m}" for m in ("accepted", "rejected", "rec.a", "rec.b", "rec.c")),
        *(f"code_gen:{m}" for m in ("accepted", "rejected", "rec.d", "rec.e")),
    ]
    mcqa = [p for p in universe if p.startswith("mcqa:")]
    assert describe_paths(mcqa, universe) == "mcqa × accepted, rejected, every recording"
    replays = [p for p in universe if PathId(p).kind.name == "recording"]
    assert describe_paths(replays, universe) == "all 2 environments × every recording"
    assert describe_paths(["mcqa:rec.a", "mcqa:rec.c", "mcqa:rejected"], universe) == "mcqa × rejected, rec.a, rec.c"
    more = [*universe, "mcqa:rec.f"]
    assert (
        describe_paths(["mcqa:rec.a", "mcqa:rec.b", "mcqa:rec.c"], more) == "mcqa × 3 of 4 recordings (rec.a, rec.b, …)"
    )


def test_a_command_judges_the_union_of_its_refs_recordings_narrowed_as_asked(tmp_path):
    from gymgate.harness.accept import planned
    from gymgate.harness.asked import Asked
    from gymgate.harness.run_options import RunOptions
    from gymgate.refs import resolve_ref

    row = _row("2+2?", "4")
    shared, newer = _recording("2+2?", "\\boxed{4}", 1.0), _recording("2+2?", "4", 0.0)
    trees = {}
    for version, recorded in (("0.4.0", [shared]), ("0.5.0", [shared, newer])):
        files = {
            "resources_servers/mcqa/data/example.jsonl": json.dumps(row) + "\n",
            "resources_servers/mcqa/data/example_rollouts.jsonl": "".join(json.dumps(r) + "\n" for r in recorded),
        }
        trees[version] = resolve_ref(str(write_tree(tmp_path / version, version, extra_files=files)))
    envs = load_environments(["mcqa"])
    keys = sorted(f"mcqa:rec.{content_key(r)}" for r in (shared, newer))
    expected, opts = planned(envs, [trees["0.5.0"], trees["0.4.0"]], Asked(), RunOptions())
    assert expected[:2] == ["mcqa:accepted", "mcqa:rejected"] and sorted(expected[2:]) == keys
    assert [p["id"] for p in opts.plan] == expected  # the plan itself crosses, in its order
    replays = [p for p in opts.plan if p["recorded"]]
    assert {p["recorded"]["gym"] for p in replays} == {"0.5.0"}  # the candidate's copy of what both ship

    narrowed, opts = planned(envs, [trees["0.5.0"]], Asked(paths=[keys[0]]), RunOptions())
    assert narrowed == [keys[0]] and [p["id"] for p in opts.plan] == [keys[0]]
    alone, opts = planned(envs, [trees["0.5.0"]], Asked(replay=False), RunOptions())  # --no-replays
    assert alone == ["mcqa:accepted", "mcqa:rejected"] and [p["id"] for p in opts.plan] == alone
    with pytest.raises(Exception, match="unknown path"):
        planned(envs, [trees["0.4.0"]], Asked(paths=[f"mcqa:rec.{content_key(newer)}"]), RunOptions())


def test_cases_list_reads_fidelity_from_the_newest_complete_run_of_the_ref(tmp_path):
    from gymgate.report.fidelity import measured
    from tests.helpers import record, stored_run

    def replayed(reproduces: bool) -> PathRecord:
        made = record("mcqa:rec.0123456789", "PASS")
        made.recording, made.fidelity = {"gym": "0.4.0"}, {"reproduces": reproduces}
        return made

    stored_run(tmp_path, "old", "0.4.0", [replayed(False)], finished=1.0)
    stored_run(tmp_path, "new", "0.4.0", [replayed(True)], finished=2.0)
    stored_run(tmp_path, "other", "0.7.0", [replayed(False)], finished=3.0)
    stored_run(tmp_path, "unfinished", "0.4.0", [replayed(False)], complete=False, finished=4.0)
    run, found = measured(tmp_path, "d-0.4.0")
    assert run.root.name == "new" and found["mcqa"].line() == "mcqa: 1/1 reproduce"
    assert measured(tmp_path, "d-0.5.0") == (None, {})


def test_families_of_derived_paths_are_named_by_their_shape():
    """Forms and faults fold as recordings do: all of them by their name, a grid of forms by its counts, anything
    else by how many (a line stays a line however many forms a bump touches)."""
    forms = [f"mcqa:form.{f}.{o}" for f in ("a", "b", "c") for o in ("accepted", "rejected")]
    faults = [f"mcqa:fault.{f}" for f in ("x", "y", "z")]
    universe = ["mcqa:accepted", "mcqa:rejected", *forms, *faults]
    grid = [p for p in forms if ".c." not in p]
    assert describe_paths(grid, universe) == "mcqa × 2 forms × 2 paths"
    assert describe_paths(forms, universe) == "mcqa × every form"
    assert describe_paths(["mcqa:accepted", *faults], universe) == "mcqa × accepted, every fault"
    ragged = ["mcqa:form.a.accepted", "mcqa:form.b.rejected", "mcqa:form.c.accepted"]
    assert describe_paths(ragged, universe) == "mcqa × 3 of 6 forms (form.a.accepted, form.b.rejected, …)"
