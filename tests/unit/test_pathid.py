"""A path id is parsed and formatted in one place (gymgate/pathid.py)."""

from __future__ import annotations

import json

import pytest

from gymgate.pathid import MODES, PathId, both, environments


def test_a_path_id_knows_its_parts_and_stays_a_plain_string():
    path = PathId("single_step_tool_use_with_argument_comparison:rejected")
    assert (path.env, path.mode, path.stem) == (
        "single_step_tool_use_with_argument_comparison",
        "rejected",
        "single_step_tool_use_with_argument_comparison-rejected",
    )
    assert json.dumps({path: path}) == json.dumps({str(path): str(path)})  # records and marks keep plain ids
    assert PathId.of("mcqa", "accepted") == "mcqa:accepted" and PathId(path) is path


@pytest.mark.parametrize("text", ["mcqa", "mcqa:", ":accepted", "a:b:c", "mcqa: accepted"])
def test_text_that_is_not_a_path_id_is_refused(text):
    with pytest.raises(ValueError, match="not a path id"):
        PathId(text)


def test_node_ids_file_stems_and_environments():
    assert PathId.in_node("src/gymgate/session/items.py::test_path[code_gen:accepted]") == "code_gen:accepted"
    assert PathId.in_node("src/gymgate/session/selftest.py::test_refused") is None
    assert PathId.from_stem("structured_outputs_v4-accepted") == "structured_outputs_v4:accepted"
    assert both(["mcqa", "code_gen"]) == [f"{e}:{m}" for e in ("mcqa", "code_gen") for m in MODES]
    assert environments(["mcqa:rejected", "code_gen:accepted", "mcqa:accepted"]) == ["code_gen", "mcqa"]


@pytest.mark.parametrize(
    ("text", "kind", "original"),
    [
        ("mcqa:accepted", "handwritten", None),
        ("mcqa:rejected", "handwritten", None),
        ("mcqa:fault.policy_500_once", "fault", "mcqa:accepted"),
        ("mcqa:rec.3f2a9c1b0d", "recording", None),
        ("mcqa:form.boxed_text.accepted", "variant", "mcqa:accepted"),
        ("mcqa:form.boxed_text.rec.3f2a9c1b0d", "variant", "mcqa:rec.3f2a9c1b0d"),
    ],
)
def test_every_name_is_of_one_declared_kind_and_knows_its_original(text, kind, original):
    path = PathId(text)
    assert path.kind.name == kind
    assert path.original == original
    if path.kind.parts(path.mode):  # formatting parses back
        assert PathId.named(path.env, kind, **path.kind.parts(path.mode)) == path


def test_a_name_no_kind_declares_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="no kind of path"):
        _ = PathId("mcqa:accepted2").kind
    with pytest.raises(ValueError, match="no kind of path"):
        PathId.named("mcqa", "nonesuch", key="x")
    assert PathId("mcqa:form.boxed_text.accepted").part("form") == "boxed_text"
    assert PathId("mcqa:accepted").part("form") == ""
