"""A variant path judged: its answer, written in another form (gymgate.variants), must come to what its original
came to on the same Gym — the same reward, the same failure markers and the same verdict fields (metamorphic
testing: the original is the oracle, whatever it earned). A variant that does not is a finding on that ref, kept
with both answers and both verdicts side by side (`PathRecord.variant`); across refs the table judges it as any
path: agreeing on the baseline and not on the candidate is regressed, the other way fixed, on neither same-fail.

Every other check of the path runs on the variant too (tokens, request contract, metadata, …)."""

from __future__ import annotations

import json
from typing import Any

from gymgate.acceptance.checks import failure_markers, tool_outputs
from gymgate.endpoint.script import Script, Turn
from gymgate.outcomes import FAIL, PASS
from gymgate.paths.spec import PathSpec
from gymgate.recordings import fidelity
from gymgate.runfolder import PathRecord
from gymgate.runfolder.record import RESULT
from gymgate.text import excerpt
from gymgate.variants.forms import Form, answer_turn, verdict_fields
from gymgate.variants.known import known
from gymgate.variants.sessions import declared_outputs

VARIANT = "variant"  # the failure kind a disagreement reports (runfolder/record.py Failure.kind)
REWARD, MARKER = "reward", "marker."  # a verdict's reward, and its failure markers' prefix
TOOL_OUTPUTS = "tool_outputs"  # a session variant's verdict: what the tools answered the original's calls
JUDGE_CALLS = "judge_requests"  # how many times the verifier asked its judge (the record's request contract)
ABSENT = "<absent>"
MASKED = "masked"  # in an oracle: the fields left out of it (its original's nondeterministic ones)
THIS_RUN, RUN_AGAIN = "this run's record", "run again for this variant, in the same Gym"


def verdict(result: Any, calls: tuple[int, ...] | None = None) -> dict[str, Any]:
    """What a variant must agree with its original on: the reward, every failure marker, the declared verdict
    fields (gymgate/variants/forms.toml) of Gym's result; with `calls` (the calls a variant added: none for the
    original), also what the tools answered every other call, in order."""
    if not isinstance(result, dict):
        return {REWARD: ABSENT}
    found = {REWARD: result.get(REWARD, ABSENT)}
    found |= {MARKER + k: v for k, v in failure_markers(result).items()}
    if calls is not None:
        found[TOOL_OUTPUTS] = [o for n, o in enumerate(tool_outputs(result)) if n not in calls]
    return found | verdict_fields(result)


def judge_calls(record: PathRecord, always: bool = False) -> dict[str, Any]:
    """How many times the path's verifier asked its judge: when it asked at all, or `always` (its original did)
    — a verifier that never asks has nothing to agree on here."""
    asked = record.request_contract.get(JUDGE_CALLS, 0)
    return {JUDGE_CALLS: asked} if asked or always else {}


def oracle(record: PathRecord | None, gym: str, tools: bool = False) -> tuple[dict[str, Any] | None, str]:
    """The original's verdict from its record, or None and why it cannot be one (it did not run to its end). The
    fields reviewed entries say the original's replays do not agree on from run to run on this Gym
    (recordings/fidelity.nondeterministic) are no oracle, whether or not this run of it diverged: they are left out
    (`MASKED` lists the verdict's keys left out). `tools`: the tool outputs are part of it (a session form's)."""
    if record is None:
        return None, "it left no record"
    result = record.observed.get(RESULT) if record.observed else None
    if record.outcome not in (PASS, FAIL) or not isinstance(result, dict):
        why = (record.reason or str(record.outcome)).splitlines()[0][:300]
        return None, f"it did not run to its end ({record.outcome}: {why})"
    noisy = fidelity.nondeterministic(record.path, gym)
    found = verdict(result, () if tools else None) | judge_calls(record)
    masked = sorted(k for k in found if any(fidelity.under(k.removeprefix(MARKER), m) for m in noisy))
    kept = {k: v for k, v in found.items() if k not in masked}
    return (kept | {MASKED: masked} if masked else kept), ""


def judge(result: PathRecord, path: PathSpec, script: Script, gym_result: Any, original: dict[str, Any], source: str):
    """The variant's verdict against its original's, into the record: a failure per field that differs."""
    masked = original.get(MASKED, [])
    form, original_path = path.detail, path.of
    assert isinstance(form, Form) and original_path is not None
    calls = script.inserted_calls if form.holds_tool_outputs else None
    mine = {
        k: v
        for k, v in (verdict(gym_result, calls) | judge_calls(result, JUDGE_CALLS in original)).items()
        if k not in masked
    } | ({MASKED: masked} if masked else {})
    before, after = answer(original_path.script), answer(script)
    shown = excerpt(before, after, context=240)
    result.sections["variant"] = {
        "form": form.name,
        "kind": form.kind,
        "why": form.why,
        "of": str(original_path.id),
        "original_from": source,
        "agrees": mine == original,
        "original": original,
        "variant": mine,
        "answers": {"original": shown[0], "variant": shown[1]},
    }
    if form.holds_tool_outputs:
        judge_declared_outputs(result, script, path, gym_result)
    differing = sorted(k for k in set(original) | set(mine) if original.get(k, ABSENT) != mine.get(k, ABSENT))
    defect = known(str(path.id), str(result.gym.get("version", "")), differing, mine) if differing else None
    if defect is not None:
        result.sections["variant"]["known"] = (
            defect.to_json()
        )  # reviewed: the run alone passes it; comparisons still see it
        return
    for key in differing:
        result.fail(VARIANT, f"{key} (the original's, {form.name})", original.get(key, ABSENT), mine.get(key, ABSENT))


def judge_declared_outputs(result: PathRecord, script: Script, path: PathSpec, gym_result: Any) -> None:
    """A read-only call the case declares an answer for, made before any other call, must answer it: the original
    cannot be its oracle (it never made the call)."""
    got = tool_outputs(gym_result)
    for position, want in declared_outputs(script, path.env.session).items():
        answered = got[position] if position < len(got) else ABSENT
        if answered != want:
            result.fail(
                VARIANT, f"the read-only call's output (declared in {path.env.name}'s [session])", want, answered
            )


def answer(script: Script) -> str:
    """The model's answer as a reader compares two forms of it: the answering turn's reasoning and text, every tool
    call (with its turn), and every judge reply."""
    index = answer_turn(script)
    turn = script.turns[index] if index is not None else Turn()
    calls = [f"[turn {n + 1}] {c.name}({c.arguments})" for n, t in enumerate(script.turns) for c in t.tool_calls]
    judged = [f"[judge] {v}" for v in script.judge_verdicts]
    parts = [f"[reasoning] {turn.reasoning}" if turn.reasoning else "", turn.content, *calls, *judged]
    return "\n".join(p for p in parts if p) or json.dumps([])
