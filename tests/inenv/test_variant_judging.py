"""A variant judged against its original (acceptance/variant.py): a failure exactly where the verdicts differ, both
answers side by side, a reviewed known defect on record without failing, and no oracle from an original that did
not run to its end."""

from __future__ import annotations

from types import SimpleNamespace

from gymgate.acceptance import variant
from gymgate.endpoint.script import Script, Turn
from gymgate.outcomes import FAIL, PASS
from gymgate.pathid import PathId
from gymgate.runfolder import PathRecord
from gymgate.variants.forms import catalogue

FORMS = {f.name: f for f in catalogue()[0]}


def case(env: str, form: str, text: str) -> tuple[SimpleNamespace, Script]:
    original = SimpleNamespace(id=PathId.of(env, "accepted"), script=Script(env, "accepted", (Turn(content=text),)))
    path = SimpleNamespace(id=PathId.of(env, f"form.{form}.accepted"), detail=FORMS[form], of=original)
    return path, FORMS[form].apply(original.script, {"options": [{"B": "PCR"}]})


def record(path, version: str = "0.7.0") -> PathRecord:
    return PathRecord(path=path.id, env=path.id.env, mode=path.id.mode, gym={"version": version})


def test_a_variant_that_comes_to_its_originals_verdict_passes():
    path, script = case("mcqa", "boxed_text", "\\boxed{B}")
    result = record(path)
    same = {"reward": 1.0, "extracted_answer": "B", "response": {"output_text": "anything"}}
    variant.judge(result, path, script, same, variant.verdict(same | {"response": {}}), variant.THIS_RUN)
    assert result.complete().outcome == PASS
    assert result.section("variant")["agrees"] is True and result.section("variant")["of"] == "mcqa:accepted"
    assert result.section("variant")["answers"] == {"original": "\\boxed{B}", "variant": "\\boxed{\\text{B}}"}


def test_a_variant_that_does_not_fails_on_each_field_that_differs():
    path, script = case("mcqa", "boxed_text", "\\boxed{B}")
    result = record(path)
    original = variant.verdict({"reward": 1.0, "extracted_answer": "B"})
    variant.judge(result, path, script, {"reward": 0.0, "extracted_answer": None}, original, variant.THIS_RUN)
    assert result.complete().outcome == FAIL
    assert {(f.kind, f.field.split(" ")[0], f.expected, f.actual) for f in result.failures} == {
        ("variant", "reward", 1.0, 0.0),
        ("variant", "extracted_answer", "B", None),
    }
    assert result.section("variant")["agrees"] is False and result.section("variant")["variant"]["reward"] == 0.0


def test_a_failure_marker_on_the_variant_alone_is_a_disagreement():
    path, script = case("mcqa", "boxed_text", "\\boxed{B}")
    result = record(path)
    original = variant.verdict({"reward": 0.0})
    variant.judge(result, path, script, {"reward": 0.0, "failure_kind": "judge"}, original, variant.THIS_RUN)
    assert [f.field.split(" ")[0] for f in result.failures] == ["marker.failure_kind"]


def test_a_reviewed_known_defect_is_on_record_and_passes_on_its_gym_only():
    path, script = case("mcqa", "boxed_text", "\\boxed{B}")
    original = variant.verdict({"reward": 1.0, "extracted_answer": "B"})
    got = {"reward": 0.0, "extracted_answer": None}
    known = record(path, "0.4.0")  # cases/variants/known.toml: mcqa's boxed forms before 0.5.0
    variant.judge(known, path, script, got, original, variant.THIS_RUN)
    assert (
        known.complete().outcome == PASS
        and known.section("variant")["agrees"] is False
        and known.section("variant")["known"]["reason"]
    )
    elsewhere = record(path, "0.7.0")  # a version the entry does not name: news
    variant.judge(elsewhere, path, script, got, original, variant.THIS_RUN)
    assert elsewhere.complete().outcome == FAIL and "known" not in elsewhere.section("variant")


def test_an_original_that_did_not_run_to_its_end_is_no_oracle():
    errored = PathRecord(path="mcqa:accepted", env="mcqa", mode="accepted", gym={}).error("gym", "startup: it died")
    assert variant.oracle(errored, "0.7.0") == (None, "it did not run to its end (ERROR: startup: it died)")
    assert variant.oracle(None, "0.7.0")[0] is None
    ran = PathRecord(path="mcqa:accepted", env="mcqa", mode="accepted", gym={}, outcome=FAIL)
    assert variant.oracle(ran, "0.7.0")[0] is None  # no result observed: nothing to agree with
    ran.observe([], {"reward": 0.0})
    assert variant.oracle(ran, "0.7.0") == ({"reward": 0.0}, "")


def test_the_originals_nondeterministic_fields_are_no_oracle():
    """A recording whose reward is a function of CPU time (a reviewed nondeterministic entry in
    cases/recordings/fidelity.toml) gives its variants no reward to agree with — also on a run where it happened to
    reproduce: the rest of its verdict still is one. Another recording's reward is an oracle."""
    ran = PathRecord(
        path="math_with_judge:rec.e7297cacf5", env="math_with_judge", mode="rec.e7297cacf5", gym={}, outcome=PASS
    )
    ran.observe([], {"reward": 1.0, "library_reward": 1.0, "extracted_answer": "x"})
    ran.fidelity = {"reproduces": True}
    original, _ = variant.oracle(ran, "0.7.0")
    assert original == {"extracted_answer": "x", "masked": ["library_reward", "reward"]}
    path, script = case("math_with_judge", "trailing_remark", "\\boxed{x}")
    result = record(path)
    got = {"reward": 0.0, "library_reward": 0.0, "extracted_answer": "x"}
    variant.judge(result, path, script, got, original, variant.THIS_RUN)
    assert result.complete().outcome == PASS and result.section("variant")["agrees"] is True
    other = PathRecord(
        path="math_with_judge:rec.28020e7576", env="math_with_judge", mode="rec.28", gym={}, outcome=PASS
    )
    other.observe([], {"reward": 1.0, "library_reward": 1.0, "extracted_answer": "x"})
    assert variant.oracle(other, "0.7.0")[0] == {"reward": 1.0, "library_reward": 1.0, "extracted_answer": "x"}


def test_a_session_variant_is_held_to_what_the_tools_answered_its_originals_calls():
    """A read-first variant: the read-only call's output is held to the case's declaration, every other output to
    the original's; a session lost after the first call fails though the reward agrees."""
    from gymgate.endpoint.script import ToolCall
    from gymgate.variants.sessions import ReadOnlyCall, SessionDecl

    read, reply = ToolCall("read", '{"id": "57"}'), ToolCall("reply", '{"id": "57"}')
    session = SessionDecl((ReadOnlyCall(read, '{"output":"s"}'),))
    env = SimpleNamespace(name="workplace_assistant", session=session)
    turns = (Turn(tool_calls=(reply,)), Turn(content="Done."))
    original = SimpleNamespace(id=PathId.of(env.name, "accepted"), script=Script(env.name, "accepted", turns))
    form = FORMS["read_first"]
    path = SimpleNamespace(id=PathId.of(env.name, "form.read_first.accepted"), detail=form, of=original, env=env)
    script = form.apply(original.script, None, session)

    def result(*outputs: str) -> dict:
        return {"reward": 1.0, "response": {"output": [{"type": "function_call_output", "output": o} for o in outputs]}}

    oracle = variant.verdict(result("ok"), ())
    assert oracle == {"reward": 1.0, "tool_outputs": ["ok"]}
    assert "tool_outputs" not in variant.verdict(result("ok"))  # other forms: the verdict only
    kept = record(path)
    variant.judge(kept, path, script, result('{"output":"s"}', "ok"), oracle, variant.THIS_RUN)
    assert kept.complete().outcome == PASS, kept.failures
    lost = record(path)
    variant.judge(lost, path, script, result('{"output":"s"}', '{"detail":"Session not initialized."}'), oracle, "")
    assert lost.complete().outcome == FAIL
    assert [f.field for f in lost.failures] == ["tool_outputs (the original's, read_first)"]
    misread = record(path)
    variant.judge(misread, path, script, result('{"output":"other"}', "ok"), oracle, "")
    assert (
        misread.complete().outcome == FAIL
        and "declared in workplace_assistant's [session]" in misread.failures[0].field
    )


def test_a_variant_is_held_to_its_originals_number_of_judge_calls():
    """A verifier that asks its judge twice for an equal verdict and once for a different one (math_with_judge):
    a judge reply read another way changes how often it asks — the variant is held to its original's count, not
    to its script's replies (the request contract leaves a variant's count to it)."""
    ran = PathRecord(path="m:accepted", env="m", mode="accepted", gym={}, outcome=PASS)
    ran.observe([], {"reward": 1.0})
    ran.request_contract = {"judge_requests": 2}
    original, _ = variant.oracle(ran, "0.7.0")
    assert original == {"reward": 1.0, "judge_requests": 2}
    env, form = "equivalence_llm_judge", FORMS["judge_closing_remark"]
    judged = Script(env, "accepted", (Turn(content="\\boxed{Darwin}"),), ("GOLD:",), ("Same. [[A=B]]",))
    first = SimpleNamespace(id=PathId.of(env, "accepted"), script=judged)
    path = SimpleNamespace(id=PathId.of(env, "form.judge_closing_remark.accepted"), detail=form, of=first)
    script = form.apply(judged, None)
    asked_once = record(path)
    asked_once.request_contract = {"judge_requests": 1}
    variant.judge(asked_once, path, script, {"reward": 1.0}, original, variant.THIS_RUN)
    assert [f.field for f in asked_once.failures] == ["judge_requests (the original's, judge_closing_remark)"]
    never = record(path)  # asked none where its original asked: 0, not absent
    variant.judge(never, path, script, {"reward": 1.0}, original, variant.THIS_RUN)
    assert never.section("variant")["variant"]["judge_requests"] == 0
    # A verifier that never asks has no count to agree on.
    quiet = PathRecord(path="m:accepted", env="m", mode="accepted", gym={}, outcome=PASS)
    quiet.observe([], {"reward": 1.0})
    assert variant.oracle(quiet, "0.7.0")[0] == {"reward": 1.0}
