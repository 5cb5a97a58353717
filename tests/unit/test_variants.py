"""The form catalogue (gymgate/variants/forms.toml): each form fits answers by what they look like, rewrites only
the answer a verifier reads, and keeps its meaning (a program's variants print what it prints, on a real stdin);
variant paths are planned after their originals, and a known defect passes a run alone while every comparison
still sees the disagreement."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from gymgate import variants
from gymgate.cases.named import load_environments
from gymgate.compare.acks import reviewed_as
from gymgate.endpoint.script import Script, ToolCall, Turn
from gymgate.errors import UsageError
from gymgate.kinds.plan import plan
from gymgate.outcomes import ERROR, FAIL, PASS
from gymgate.pathid import PathId
from gymgate.variants.forms import catalogue, selected, verdict_fields
from gymgate.variants.known import Defect, defects
from gymgate.verdict import known_defect, label
from tests.helpers import record, stored_run

FORMS = {f.name: f for f in catalogue()[0]}
OPTIONS = {"options": [{"A": "Karyotyping"}, {"B": "Polymerase Chain Reaction (PCR)"}]}
PROGRAM = """t = int(input())
total = 0
for _ in range(t):
    a, b = map(int, input().split())
    total += a * b
name = input()
print(total, name)
"""


def said(text: str, reasoning: str = "") -> Script:
    return Script("env", "accepted", (Turn(content=text, reasoning=reasoning),))


def text_of(script: Script | None) -> str | None:
    return None if script is None else script.turns[-1].content


def test_the_catalogue_reads_and_every_form_names_a_path():
    forms, fields = catalogue()
    assert forms and "extracted_answer" in fields
    for form in forms:
        name = PathId.named("mcqa", "variant", form=form.name, original="rec.3f2a9c1b0d").mode
        assert PathId.of("mcqa", name).mode == name
        assert PathId.of("mcqa", name).original == "mcqa:rec.3f2a9c1b0d"
    assert PathId("mcqa:accepted").original is None
    assert PathId("mcqa:fault.policy_500_once").original == "mcqa:accepted"
    assert selected(variants.NONE) == () and set(selected(variants.DEFAULT)) < set(selected(variants.ALL))
    with pytest.raises(ValueError):
        selected("some")


@pytest.mark.parametrize(
    "form, text, want",
    [
        ("boxed_text", "so \\boxed{A}, no: \\boxed{B}", "so \\boxed{A}, no: \\boxed{\\text{B}}"),
        ("boxed_option", "\\boxed{B}", "\\boxed{B: Polymerase Chain Reaction (PCR)}"),
        ("boxed_last_letter", "\\boxed{A}", "\\boxed{B} No, wait: \\boxed{A}"),
        ("boxed_last_letter", "\\boxed{C}", "\\boxed{A} No, wait: \\boxed{C}"),
        ("boxed_last_number", "The answer is \\boxed{32}", "The answer is \\boxed{0} No, wait: \\boxed{32}"),
        ("answer_bold", "Thinking.\nAnswer: C", "Thinking.\n**Answer:** C"),
        ("trailing_remark", "\\boxed{B}", "\\boxed{B}\n\nI hope this helps."),
        ("reasoning_in_text", "42", "Let me work through this step by step before I answer.\n\n42"),
    ],
)
def test_a_form_rewrites_the_answer_a_verifier_reads(form, text, want):
    assert text_of(FORMS[form].apply(said(text), OPTIONS)) == want


@pytest.mark.parametrize(
    "form, text",
    [
        ("boxed_text", "\\boxed{Darwin}"),  # not a letter
        ("boxed_option", "\\boxed{J}"),  # the row gives J no option text
        ("boxed_last_number", "\\boxed{x+1}"),
        ("stdin_readline", "```python\nprint(1)\n```"),  # reads no input
        ("stdin_iterate", "```python\nimport sys\nn = int(sys.stdin.readline())\nprint(input())\n```"),
        ("trailing_remark", '{"name": "x"}'),  # a document: text around it changes what it is
        ("trailing_remark", ""),
    ],
)
def test_a_form_that_does_not_fit_makes_no_variant(form, text):
    assert FORMS[form].apply(said(text), OPTIONS) is None


def test_a_form_that_reads_the_row_fits_for_now_without_one():
    planned = FORMS["boxed_option"].apply(said("\\boxed{B}"), None)
    assert planned is not None and "<option>" in text_of(planned)


def test_reasoning_goes_before_the_answer_in_the_reasoning_channel():
    form = FORMS["reasoning_first"]
    assert form.apply(said("42")).turns[0].reasoning == "Let me work through this step by step before I answer."
    assert form.apply(said("42", "I add.")).turns[0].reasoning.endswith("\nI add.")
    assert form.apply(Script("e", "m", (Turn(tool_calls=(ToolCall("f", "{}"),)),))) is None


def run(source: str) -> str:
    """A program's output on a real stdin (the input PROGRAM reads)."""
    done = subprocess.run([sys.executable, "-c", source], input="2\n3 4\n5 6\nada\n", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("form", ["stdin_readline", "stdin_iterate", "stdin_read", "stdin_buffer"])
def test_a_program_read_another_way_prints_what_it_printed(form):
    """Each way of reading input keeps the program's meaning: on a real stdin, original and variant agree."""
    text = f"Here it is:\n```python\n{PROGRAM}```\nDone."
    variant = text_of(FORMS[form].apply(said(text)))
    assert variant is not None and variant.startswith("Here it is:\n```python\n") and variant.endswith("```\nDone.")
    code = variant.split("```python\n")[1].split("```")[0]
    assert "input()" not in code

    assert run(code) == run(PROGRAM) == "42 ada\n"


@pytest.mark.parametrize("form", ["stdout_write", "stdout_buffer_write", "output_joined"])
def test_a_program_that_writes_another_way_writes_what_it_wrote(form):
    """Each way of writing output keeps the program's meaning: run for real, original and variant write the same."""
    program = PROGRAM + 'print("a", 1, sep="-", end="!\\n")\nfor i in range(2):\n    print(i, flush=True)\n'
    code = text_of(FORMS[form].apply(said(f"```python\n{program}```")))
    assert code is not None and "\nprint(total" not in code
    code = code.split("```python\n")[1].split("```")[0]

    assert run(code) == run(program) == "42 ada\na-1!\n0\n1\n"


@pytest.mark.parametrize(
    "program",
    [
        "import sys\nsys.stdout.write('1')\nprint(2)",  # writes through sys.stdout already
        "print(1, file=sys.stderr)",  # not to its output
        "p = print\np(1)",  # the name print for something else
    ],
)
def test_a_program_that_writes_otherwise_gets_no_output_form(program):
    for form in ("stdout_write", "stdout_buffer_write", "output_joined"):
        assert FORMS[form].apply(said(f"```python\n{program}\n```")) is None
    assert FORMS["output_joined"].apply(said("```python\nprint(1)\nexit()\n```")) is None


def judged(*verdicts: str) -> Script:
    return Script("env", "accepted", (Turn(content="\\boxed{Darwin}"),), ("GOLD:",), verdicts)


@pytest.mark.parametrize(
    "form, reply, want",
    [
        (
            "judge_reasoning_first",
            "[[A=B]]",
            "Comparing the candidate with the gold answer, on what each of them states.\n\n[[A=B]]",
        ),
        (
            "judge_other_label_first",
            "Same. [[A=B]]",
            "Same. At first sight this could be [[A!=B]], but on reflection my verdict is [[A=B]]",
        ),
        (
            "judge_other_label_first",
            "[[A!=B]]",
            "At first sight this could be [[A=B]], but on reflection my verdict is [[A!=B]]",
        ),
        ("judge_label_bold", "Same. [[A=B]]", "Same. **[[A=B]]**"),
        ("judge_label_lower", "No. [[A!=B]]", "No. [[a!=b]]"),
        ("judge_closing_remark", "[[A=B]]", "[[A=B]]\n\nThat is my final verdict."),
    ],
)
def test_a_judge_form_rewrites_the_judge_reply_and_nothing_else(form, reply, want):
    script = judged(reply)
    rewritten = FORMS[form].apply(script)
    assert rewritten.judge_verdicts == (want,) and rewritten.turns == script.turns
    other = FORMS[form].apply(judged("Judgement: yes"))  # another judge's verdict: only the label-free forms fit
    assert (other is not None) == (form in ("judge_reasoning_first", "judge_closing_remark"))
    assert FORMS[form].apply(said("[[A=B]]")) is None  # a policy's text is not a judge reply


def session_script(*turns: Turn) -> Script:
    return Script("env", "accepted", turns)


REPLY = ToolCall("reply", '{"id": "57"}')
READ = ToolCall("read", '{"id": "57", "field": "subject"}')
DONE = Turn(content="Done.")


def test_session_forms_spread_the_same_work_over_more_calls():
    from gymgate.variants.sessions import ReadOnlyCall, SessionDecl

    session = SessionDecl((ReadOnlyCall(READ, '{"output":"s"}'),))
    one = session_script(Turn(reasoning="r", tool_calls=(REPLY,)), DONE)
    first = FORMS["read_first"].apply(one, None, session)
    assert [t.tool_calls for t in first.turns] == [(READ,), (REPLY,), ()] and first.inserted_calls == (0,)
    assert first.turns[1].reasoning == "r"
    after = FORMS["read_after"].apply(one, None, session)
    assert [t.tool_calls for t in after.turns] == [(REPLY,), (READ,), ()] and after.inserted_calls == (1,)
    assert FORMS["calls_split"].apply(one, None, session) is None  # one call: nothing to split
    two = session_script(Turn(tool_calls=(REPLY, READ)), DONE)
    split = FORMS["calls_split"].apply(two, None, session)
    assert [t.tool_calls for t in split.turns] == [(REPLY,), (READ,), ()] and split.inserted_calls == ()
    merged = FORMS["calls_at_once"].apply(split, None, session)
    assert merged.turns == two.turns
    forbidden = {"responses_create_params": {"parallel_tool_calls": False}}
    assert FORMS["calls_at_once"].apply(split, forbidden, session) is None
    assert FORMS["calls_at_once"].apply(split, forbidden, SessionDecl(parallel=True)) is not None
    # No [session] table: the environment's agent is not known to run calls in one session; no read-only call: no
    # read form.
    assert all(FORMS[f].apply(two, None, None) is None for f in ("read_first", "calls_split", "calls_at_once"))
    assert FORMS["read_first"].apply(one, None, SessionDecl()) is None
    assert Script.from_json(json.loads(json.dumps(first.to_json()))) == first


def test_a_read_only_call_made_first_is_held_to_its_declared_output_only_there():
    from gymgate.variants.sessions import ReadOnlyCall, SessionDecl, declared_outputs

    session = SessionDecl((ReadOnlyCall(READ, '{"output":"s"}'),))
    first = FORMS["read_first"].apply(session_script(Turn(tool_calls=(REPLY,)), DONE), None, session)
    assert declared_outputs(first, session) == {0: '{"output":"s"}'}
    after = FORMS["read_after"].apply(session_script(Turn(tool_calls=(REPLY,)), DONE), None, session)
    assert declared_outputs(after, session) == {}  # after the work, what it reads depends on the work


def test_a_malformed_session_table_names_what_is_wrong():
    from gymgate.variants.sessions import SessionDecl

    with pytest.raises(ValueError, match="unknown key"):
        SessionDecl.from_data({"read_only": [], "writes": []}, "cases/x.toml")
    with pytest.raises(ValueError, match="read_only entries"):
        SessionDecl.from_data({"read_only": [{"name": "f"}]}, "cases/x.toml")
    with pytest.raises(ValueError, match="parallel"):
        SessionDecl.from_data({"parallel": "yes"}, "cases/x.toml")


def test_tool_call_arguments_are_the_same_json_written_otherwise():
    calls = (ToolCall("reply", '{"email_id": "57", "body": "Thanks"}'), ToolCall("noop", "not json"))
    script = Script("e", "m", (Turn(tool_calls=calls), Turn(content="Done.")))
    for name in ("json_reordered", "json_indented", "json_compact"):
        rewritten = FORMS[name].apply(script)
        first, second = rewritten.turns[0].tool_calls
        assert first.arguments != calls[0].arguments and json.loads(first.arguments) == json.loads(calls[0].arguments)
        assert second == calls[1] and rewritten.turns[1] == script.turns[1]
    assert list(json.loads(FORMS["json_reordered"].apply(script).turns[0].tool_calls[0].arguments)) == [
        "body",
        "email_id",
    ]
    one_key = Script("e", "m", (Turn(tool_calls=(ToolCall("f", '{"a": 1}'),)),))
    assert FORMS["json_reordered"].apply(one_key) is None  # the same text: no variant


def test_the_verdict_fields_a_result_carries():
    result = {
        "reward": 1.0,
        "extracted_answer": "B",
        "extracted_model_code": "print(1)",
        "judge_evaluations": [{"verdict_label": "[[A=B]]", "response": {"x": 1}}],
    }
    assert verdict_fields(result) == {"extracted_answer": "B", "judge_evaluations.0.verdict_label": "[[A=B]]"}


def test_variants_are_planned_after_their_originals_and_reviewed_as_them():
    (mcqa,) = load_environments(["mcqa"])
    planned = plan([mcqa], selections={"fault": variants.ALL, "variant": variants.DEFAULT})
    ids = [p.id for p in planned]
    assert ids[:2] == ["mcqa:accepted", "mcqa:rejected"]
    assert "mcqa:form.boxed_text.accepted" in ids and "mcqa:form.boxed_text.rejected" in ids
    assert any(p.kind == "fault" for p in planned)  # fault paths are planned, and no variant is one of theirs
    assert not any(PathId(i).kind.name == "variant" and PathId(i).original.kind.name == "fault" for i in ids)
    assert [p.id for p in plan([mcqa])] == ["mcqa:accepted", "mcqa:rejected"]  # none unless asked
    assert reviewed_as("mcqa:form.boxed_text.rec.3f2a9c1b0d") == (
        "mcqa:form.boxed_text.rec.3f2a9c1b0d",
        "mcqa:rec.3f2a9c1b0d",
    )


def test_a_known_defect_passes_alone_and_is_a_disagreement_to_every_comparison():
    known = record("mcqa:form.boxed_text.accepted", PASS, variant={"agrees": False, "known": {"reason": "r"}})
    agreeing = record("mcqa:form.boxed_text.rejected", PASS, variant={"agrees": True})
    assert known_defect(known) and not known_defect(agreeing)
    assert label(known) == FAIL and label(agreeing) == PASS
    unreviewed = record("mcqa:form.boxed_text.accepted", PASS, variant={"agrees": False})  # no entry: not one
    assert not known_defect(unreviewed)


def test_a_known_defect_covers_only_its_fields_values_and_gyms_with_a_reason():
    pinned = {"reward": 0.0}
    defect = Defect(("math_with_judge:form.boxed_last_number.*",), ("reward", "extracted_answer"), "why", ("0.7.0",))
    path = "math_with_judge:form.boxed_last_number.accepted"
    assert defect.covers(path, "0.7.0", ["reward"], {"reward": 0.0})
    assert not defect.covers(path, "0.6.0", ["reward"], {})
    assert not defect.covers(path, "0.7.0", ["reward", "library_reward"], {})  # a field nobody reviewed is news
    assert not defect.covers("mcqa:form.boxed_text.accepted", "0.7.0", ["reward"], {})
    assert not Defect(defect.paths, defect.fields, " ", defect.gyms).covers(path, "0.7.0", ["reward"], {})
    direction = Defect(defect.paths, defect.fields, "why", (), pinned)
    assert direction.covers(path, "0.2.0", ["reward"], {"reward": 0.0})
    assert not direction.covers(path, "0.2.0", ["reward"], {"reward": 1.0})  # wrong the other way: news


@pytest.mark.parametrize(
    "entry, complaint",
    [
        ('paths = "mcqa:form.*"\nfields = ["reward"]\nreason = "r"', "`paths` must be a non-empty list"),
        ('paths = ["mcqa:form.*"]\nfields = ["reward"]\nreason = 3', "`reason` must say why"),
        ('paths = ["mcqa:form.*"]\nfields = ["reward"]\nreason = "r"\nvariant = { score = 0 }', "`variant` must be"),
        ('paths = ["mcqa:form.*"]\nfields = ["reward"]\nreason = "r"\ngym = ["0.7.0"]', "unknown key `gym`"),
    ],
)
def test_a_malformed_known_defect_is_a_usage_error_naming_it(tmp_path, entry, complaint):
    file = tmp_path / "known.toml"
    file.write_text("[[defect]]\n" + entry + "\n")
    with pytest.raises(UsageError, match=re.escape("[[defect]] 1: ") + ".*" + re.escape(complaint)):
        defects(file)


def test_the_committed_known_defects_read():
    assert all(d.reason and d.paths and d.fields for d in defects())


def test_reports_show_each_disagreement_with_both_answers_side_by_side():
    from gymgate.report.variants import disagreements, known_reason, variant_columns

    shown = {
        "form": "boxed_text",
        "why": "a letter boxed as LaTeX text",
        "original": {"reward": 1.0},
        "variant": {"reward": 0.0},
        "answers": {"original": "\\boxed{B}", "variant": "\\boxed{\\text{B}}"},
    }
    news = record("mcqa:form.boxed_text.accepted", FAIL, variant={**shown, "agrees": False})
    known = record("mcqa:form.boxed_text.rejected", PASS, variant={**shown, "agrees": False, "known": {"reason": "r"}})
    fine = record("mcqa:form.boxed_option.accepted", PASS, variant={**shown, "agrees": True})
    found = disagreements([news, known, fine])
    assert list(found) == ["mcqa:form.boxed_text.accepted", "mcqa:form.boxed_text.rejected"]
    assert found["mcqa:form.boxed_text.accepted"].answers["variant"] == "\\boxed{\\text{B}}"
    assert known_reason(known) == "known defect: r" and known_reason(fine) == ""
    errored = record("mcqa:form.boxed_text.accepted", ERROR)  # no oracle: it never came to a verdict
    rows = variant_columns([("base", [fine, errored]), ("cand", [news, known, fine])])
    assert rows == [
        ("mcqa:form.boxed_text.accepted", ["ERROR", "disagrees"]),
        ("mcqa:form.boxed_text.rejected", ["—", "disagrees (known defect)"]),
    ]


def test_report_md_and_html_show_a_regressed_form_with_both_answers(tmp_path):
    from gymgate.compare.runs import compare_runs
    from gymgate.report.html import render_html
    from gymgate.report.markdown import render_markdown

    path = "mcqa:form.boxed_text.accepted"
    shown = {
        "why": "a letter boxed as LaTeX text",
        "original": {"reward": 1.0},
        "answers": {"original": "\\boxed{B}", "variant": "\\boxed{\\text{<B>}}"},
    }
    base = stored_run(tmp_path, "a", "0.4.0", [record(path, PASS, variant={**shown, "agrees": True})])
    wrong = {**shown, "agrees": False, "variant": {"reward": 0.0}}
    cand = stored_run(tmp_path, "b", "0.5.0", [record(path, FAIL, reason="[variant] reward", variant=wrong)])
    comparison = compare_runs(base, cand)
    markdown = render_markdown(comparison)
    assert "### Forms the verifier gets wrong" in markdown
    assert f"| `{path}` | agrees | disagrees | regressed |" in markdown
    assert "### What the paths exercised" in markdown  # per environment, by family: the form counts in its own
    assert "| mcqa | 1 | · | · | · | · | · | · | · |" in markdown
    assert "`\\boxed{B}`" in markdown and "`\\boxed{\\text{<B>}}`" in markdown
    page = render_html(comparison)
    assert 'id="variants"' in page and "<td>agrees</td><td>disagrees</td>" in page
    assert "<pre>\\boxed{\\text{&lt;B&gt;}}</pre>" in page  # the answer, escaped, beside the original's


ROW = {
    "responses_create_params": {
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Who?"},
            {"type": "function_call", "call_id": "c1", "name": "find", "arguments": '{"q": "who"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "Darwin"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Darwin."}]},
        ],
        "tools": [],
    },
    "expected_answer": "darwin",
}


def test_a_row_form_says_the_same_conversation_another_way_and_fits_only_what_it_rewrites():
    """Each row form keeps the conversation: the messages a model is sent (acceptance/expected.py, as the
    first_turn check builds them) are the original row's; the answer is untouched."""
    from gymgate.acceptance.expected import first_turn_messages  # noqa: PLC0415 - yaml: the harness has it

    want = first_turn_messages(ROW["responses_create_params"])
    script = said("\\boxed{Darwin}")
    for name in ("row_system_as_instructions", "row_typed_content", "row_chat_tool_calls"):
        form = FORMS[name]
        fed = form.feed(ROW)
        assert fed is not None and fed != ROW and fed["expected_answer"] == "darwin", name
        assert first_turn_messages(fed["responses_create_params"]) == want, name
        assert form.apply(script, ROW) == script and form.apply(script, None) == script  # the answer stays
    instructed = FORMS["row_system_as_instructions"].feed(ROW)
    assert instructed["responses_create_params"]["instructions"] == "Be brief."
    back = FORMS["row_instructions_as_system"].feed(instructed)
    assert back["responses_create_params"]["input"] == ROW["responses_create_params"]["input"]
    chat = FORMS["row_chat_tool_calls"].feed(ROW)["responses_create_params"]["input"]
    assert chat[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"q": "who"}'}}],
    }
    assert chat[3] == {"role": "tool", "tool_call_id": "c1", "content": "Darwin"}
    plain = {"responses_create_params": {"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]}}
    for name in (
        "row_system_as_instructions",
        "row_instructions_as_system",
        "row_typed_content",
        "row_chat_tool_calls",
    ):
        assert FORMS[name].feed(plain) is None and FORMS[name].apply(script, plain) is None, name
    assert ROW["responses_create_params"]["input"][0] == {"role": "system", "content": "Be brief."}  # not mutated
