"""A variant path judged: its answer, written in another form (gymgate.variants), must come to what its original
came to on the same Gym — the same reward, the same failure markers and the same verdict fields (metamorphic
testing: the original is the oracle, whatever it earned). A variant that does not is a finding on that ref, kept
with both answers and both verdicts side by side (`PathRecord.variant`); across refs the table judges it as any
path: agreeing on the baseline and not on the candidate is regressed, the other way fixed, on neither same-fail.

Every other check of the path runs on the variant too (tokens, request contract, metadata, …)."""

from __future__ import annotations

import json
from typing import Any

from gymgate.acceptance.checks import failure_markers
from gymgate.endpoint.script import Script, Turn
from gymgate.outcomes import FAIL, PASS
from gymgate.paths.spec import PathSpec
from gymgate.recordings import fidelity
from gymgate.runfolder import PathRecord
from gymgate.runfolder.record import RESULT
from gymgate.text import excerpt
from gymgate.variants.forms import Form, answer_turn, verdict_fields
from gymgate.variants.known import known

VARIANT = "variant"  # the failure kind a disagreement reports (runfolder/record.py Failure.kind)
REWARD, MARKER = "reward", "marker."  # a verdict's reward, and its failure markers' prefix
ABSENT = "<absent>"
MASKED = "masked"  # in an oracle: the fields left out of it (its original's nondeterministic ones)
THIS_RUN, RUN_AGAIN = "this run's record", "run again for this variant, in the same Gym"


def verdict(result: Any) -> dict[str, Any]:
    """What a variant must agree with its original on: the reward, every failure marker, the declared verdict
    fields (gymgate/variants/forms.toml) of Gym's result."""
    if not isinstance(result, dict):
        return {REWARD: ABSENT}
    found = {REWARD: result.get(REWARD, ABSENT)}
    found |= {MARKER + k: v for k, v in failure_markers(result).items()}
    return found | verdict_fields(result)


def oracle(record: PathRecord | None, gym: str) -> tuple[dict[str, Any] | None, str]:
    """The original's verdict from its record, or None and why it cannot be one (it did not run to its end). The
    fields reviewed entries say the original's replays do not agree on from run to run on this Gym
    (recordings/fidelity.nondeterministic) are no oracle, whether or not this run of it diverged: they are left out
    (`MASKED` lists the verdict's keys left out)."""
    if record is None:
        return None, "it left no record"
    result = record.observed.get(RESULT) if record.observed else None
    if record.outcome not in (PASS, FAIL) or not isinstance(result, dict):
        why = (record.reason or str(record.outcome)).splitlines()[0][:300]
        return None, f"it did not run to its end ({record.outcome}: {why})"
    noisy = fidelity.nondeterministic(record.path, gym)
    found = verdict(result)
    masked = sorted(k for k in found if any(fidelity.under(k.removeprefix(MARKER), m) for m in noisy))
    kept = {k: v for k, v in found.items() if k not in masked}
    return (kept | {MASKED: masked} if masked else kept), ""


def judge(result: PathRecord, path: PathSpec, script: Script, gym_result: Any, original: dict[str, Any], source: str):
    """The variant's verdict against its original's, into the record: a failure per field that differs."""
    masked = original.get(MASKED, [])
    mine = {k: v for k, v in verdict(gym_result).items() if k not in masked} | ({MASKED: masked} if masked else {})
    form, original_path = path.detail, path.of
    assert isinstance(form, Form) and original_path is not None
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
    differing = sorted(k for k in set(original) | set(mine) if original.get(k, ABSENT) != mine.get(k, ABSENT))
    defect = known(str(path.id), str(result.gym.get("version", "")), differing, mine) if differing else None
    if defect is not None:
        result.sections["variant"]["known"] = (
            defect.to_json()
        )  # reviewed: the run alone passes it; comparisons still see it
        return
    for key in differing:
        result.fail(VARIANT, f"{key} (the original's, {form.name})", original.get(key, ABSENT), mine.get(key, ABSENT))


def answer(script: Script) -> str:
    """The model's answer as a reader compares two forms of it: the answering turn's reasoning and text, and every
    tool call."""
    index = answer_turn(script)
    turn = script.turns[index] if index is not None else Turn()
    calls = [f"{c.name}({c.arguments})" for t in script.turns for c in t.tool_calls]
    parts = [f"[reasoning] {turn.reasoning}" if turn.reasoning else "", turn.content, *calls]
    return "\n".join(p for p in parts if p) or json.dumps([])
