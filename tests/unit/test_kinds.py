"""Kinds of path as values with behaviour (gymgate.kinds): every declared kind is found and is what it is declared
as, a plan crosses the harness/session boundary as values and comes back equal, and a kind written only here (the
dummy `echo`, tests/dummy_kind.py) plans, crosses, compares and reports with nothing of gymgate changed but the
declarations file it is added to."""

from __future__ import annotations

import json

import pytest

from gymgate import pathid
from gymgate.cases.named import load_environments
from gymgate.compare.acks import reviewed_as
from gymgate.compare.runs import compare_runs
from gymgate.kinds import kind_of, kinds, planfile
from gymgate.kinds.plan import plan
from gymgate.pathid import PathId
from gymgate.recordings.read import Recording
from gymgate.report.grouping import describe_paths
from gymgate.report.markdown import render_markdown
from gymgate.runfolder.record import Failure
from gymgate.selection import ALL
from tests import dummy_kind
from tests.helpers import record, stored_run

(MCQA,) = load_environments(["mcqa"])
RECORDING = Recording(
    "mcqa",
    "0123456789",
    "0.7.0",
    "resources_servers/mcqa/data/example_rollouts.jsonl",
    3,
    "s" * 64,
    {"response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": "C"}]}]}, "reward": 1.0},
    row={"responses_create_params": {"input": "Q?"}, "expected_answer": "C"},
    row_file="resources_servers/mcqa/data/example.jsonl",
    row_line=1,
    row_sha256="r" * 64,
)


@pytest.fixture
def echo(tmp_path):
    """The dummy kind, declared beside the real ones for this test only."""
    real = pathid.DECLARED
    dummy_kind.register(dummy_kind.declare(tmp_path))
    yield dummy_kind.KIND
    dummy_kind.register(real)


def test_every_declared_kind_is_found_and_is_what_it_is_declared_as():
    assert (
        [k.name for k in kinds()]
        == [k.name for k in pathid.kinds()]
        == ["handwritten", "fault", "recording", "variant"]
    )
    assert kind_of("mcqa:form.boxed_text.rec.0123456789").name == "variant"


def test_a_module_that_is_not_the_kind_it_is_declared_as_is_refused(tmp_path):
    real = pathid.DECLARED
    wrong = tmp_path / "pathkinds.toml"
    wrong.write_text(
        real.read_text().replace('behaviour = "gymgate.kinds.fault"', 'behaviour = "gymgate.kinds.variant"')
    )
    dummy_kind.register(wrong)
    try:
        with pytest.raises(ValueError, match="gymgate.kinds.variant.KIND is 'variant', declared as 'fault'"):
            kinds()
    finally:
        dummy_kind.register(real)


def test_a_plan_of_every_kind_crosses_as_json_and_comes_back_equal():
    paths = plan([MCQA], [RECORDING], {"fault": ALL, "variant": ALL})
    assert {p.kind for p in paths} == {"handwritten", "fault", "recording", "variant"}
    lines = [json.loads(json.dumps(planfile.to_json(p), sort_keys=True)) for p in paths]
    back = planfile.read(lines, [MCQA])
    assert back == paths
    assert [p.of.id for p in back if p.kind == "variant"][-1] == "mcqa:rec.0123456789"  # a line carries its original
    with pytest.raises(ValueError, match="environment 'mcqa' is not among"):
        planfile.read(lines[:1], load_environments(["code_gen"]))


def test_a_kind_written_only_in_a_test_plans_after_the_others_and_crosses_as_values(echo):
    paths = plan([MCQA], [RECORDING])
    assert [p.id for p in paths] == ["mcqa:accepted", "mcqa:rejected", "mcqa:rec.0123456789", "mcqa:echo.2"]
    mine = paths[-1]
    assert mine.kind == "echo" and mine.of is paths[0] and mine.id.original == "mcqa:accepted"
    assert planfile.read([json.loads(json.dumps(planfile.to_json(mine)))], [MCQA]) == [mine]
    # Its check is its own: a reward other than its accepted path's declared one fails it, under its own name.
    result = record("mcqa:echo.2", "ERROR")
    ((name, check),) = echo.checks(mine, result, None, {"full_result": {"reward": 0.0}})
    check()
    assert (name, [f.kind for f in result.failures]) == ("echo", ["echo"])


def test_a_kind_written_only_in_a_test_is_compared_reviewed_and_reported_as_any(tmp_path, echo):
    base = stored_run(tmp_path, "a", "0.6.0", [record("mcqa:accepted", "PASS"), record("mcqa:echo.2", "PASS")])
    failing = Failure("echo", "reward (its accepted path's)", 1.0, 0.0)
    cand = stored_run(
        tmp_path,
        "b",
        "0.7.0",
        [
            record("mcqa:accepted", "PASS"),
            record("mcqa:echo.2", "FAIL", failures=[failing], reason=failing.line()),
        ],
    )
    comparison = compare_runs(base, cand)
    assert {p.path: p.category for p in comparison.paths} == {"mcqa:accepted": "same-pass", "mcqa:echo.2": "regressed"}
    assert comparison.exit_code == 1
    assert (
        "- `mcqa:echo.2`: PASS → FAIL — [echo] reward (its accepted path's): expected 1.0, got 0.0"
        in render_markdown(comparison)
    )
    assert reviewed_as("mcqa:echo.2") == ("mcqa:echo.2", PathId("mcqa:accepted"))  # an ack of its original covers it
    assert describe_paths(["mcqa:echo.2"], ["mcqa:accepted", "mcqa:echo.2"]) == "mcqa × echo.2"


def test_a_plan_naming_a_fault_or_form_the_catalogue_lacks_is_refused():
    (line,) = [planfile.to_json(p) for p in plan([MCQA], (), {"fault": ALL}) if p.id == "mcqa:fault.policy_500_once"]
    with pytest.raises(ValueError, match="no entry 'policy_999' in the fault catalogue"):
        planfile.read([{**line, "detail": "policy_999"}], [MCQA])
