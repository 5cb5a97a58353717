"""A load run on a Ray cluster, made one record: each unit ran both refs on one node (so the interleaving cancels that
node's drift) for its share of the environments; the caller merges what the units measured and judges it here, as it
judges a local load run. What a unit did not bring back — it was refused, lost, stopped, measured under other
declarations — is never a pass: each of its environments is recorded with why, and judged unjudged."""

from __future__ import annotations

from typing import Any

from gymgate.load.measures import SCHEMA, SIDES


def unmeasured(envs: list[str], why: str) -> dict[str, Any]:
    """The record's entries for environments a unit did not measure: on each side, the reason (load/judge.py reads
    a side with an error as not judged)."""
    return {env: {side: {"error": why, "rounds": []} for side in SIDES} for env in envs}


def merge_unit(record: dict[str, Any], label: str, envs: list[str], part: dict[str, Any] | None, why: str) -> None:
    """Fold one unit's record (`part`, None when it brought none back; `why`: how the unit ended) into `record`, the
    caller's, started with the same declarations. Each environment is measured by exactly one unit."""
    units = record.setdefault("units", {})
    units[label] = {"envs": envs, "ended": why}
    if part is None:
        record["envs"].update(unmeasured(envs, f"load unit {label} brought no record back: {why}"))
        return
    if (
        part.get("schema") != SCHEMA
        or part.get("declared") != record["declared"]
        or part.get("latency") != record.get("latency")
    ):
        model = (part.get("latency") or {}).get("name", "none")
        theirs = f"schema {part.get('schema')}, declarations {str(part.get('declared'))[:19]}, latency {model}"
        record["envs"].update(unmeasured(envs, f"load unit {label} measured under other declarations ({theirs})"))
        return
    missing = [env for env in envs if env not in part.get("envs", {})]
    record["envs"].update({env: part["envs"][env] for env in envs if env not in missing})
    record["envs"].update(unmeasured(missing, f"load unit {label} ended before measuring it: {why}"))
    record["levels"] = sorted({*record["levels"], *part.get("levels", [])})  # a node's cores set its levels
    record["not_driven"] = sorted({*record["not_driven"], *part.get("not_driven", [])} - {*record["levels"]})
    record["started"] = min(record["started"], part.get("started", record["started"]))
    record["finished"] = max(record.get("finished", 0.0), part.get("finished", 0.0))
    for side in SIDES:
        theirs = part.get("refs", {}).get(side, {})
        units[label][side] = {"ready": theirs.get("ready", {}), "left_running": theirs.get("left_running", [])}
        mine = record["refs"][side]
        mine.setdefault("ready", theirs.get("ready", {}))
        mine["left_running"] = [*mine.get("left_running", []), *theirs.get("left_running", [])]
    if "saturated" in part:
        record["saturated"] = part["saturated"]
    for kind, sides in part.get("saturation", {}).items():
        merged = record.setdefault("saturation", {}).setdefault(kind, {})
        for side, answer in sides.items():
            into = merged.setdefault(side, {**{k: v for k, v in answer.items() if k != "envs"}, "envs": {}})
            if "envs" not in answer:  # one unit's failure is the whole saturation's: never judged from the rest
                merged[side] = {"error": f"load unit {label}: {answer.get('error', 'no answer')}"}
            elif "envs" in into:
                into["envs"].update(answer["envs"])
