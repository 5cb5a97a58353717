"""The policy server saturated while rollouts are in flight, judged (load/sweep.toml [[saturation]]): per environment
and way of saturating, what each ref did — absorbed it (every rollout came back, each equal to its path alone), failed
its batch (RL's consumer raises: no reward at all), hung past `recover_s`, came back unlike its path alone, or came
back with a reward for a call that was never answered — how many attempts one call took, and how long after the
window the batch ended. The candidate regresses when it does worse than the baseline: a worse outcome, retries beyond
`max_attempts` where the baseline stayed within, or an end past `recover_s` where the baseline's was not. A changed
outcome fails closed whichever way it went that is worse by SEVERITY (a release that stops riding out an outage it
used to absorb changes what RL meets): a reviewed `[[load]]` entry naming the saturation as its metric accepts it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gymgate.load.measures import BASELINE, CANDIDATE
from gymgate.verdict import LoadCorrectness

ABSORBED, FAILED, DIFFERS, HUNG, UNEARNED = "absorbed", "failed", "differs", "hung", "unearned"
SEVERITY = {ABSORBED: 0, FAILED: 1, DIFFERS: 2, HUNG: 3, UNEARNED: 3}  # what RL gets, from harmless to harmful
TIMEOUT = "RolloutTimeout"  # the error a batch past its deadline raises (consumer/errors.py)


def outcome(side: dict[str, Any]) -> str:
    """How one environment's saturated batch ended on one ref."""
    if side.get("unearned"):
        return UNEARNED
    if TIMEOUT in side.get("error", "") or side.get("missing"):
        return HUNG
    if side.get("error"):
        return FAILED
    if side.get("differed"):
        return DIFFERS
    return ABSORBED


def describe(side: dict[str, Any]) -> str:
    text = f"{outcome(side)}, the most attempts of one call {side.get('max_attempts', 0)}"
    text += f", ended {side.get('ended_after_window_s', 0):.1f} s after the window"
    if side.get("unearned"):
        text += f"; {len(side['unearned'])} rollout(s) came back with a call never answered"
    if side.get("differ"):
        first = side["differ"][0]
        diff = first["differences"][0]
        text += f"; {side['differed']} differ from their path alone, first {first['path']}: {diff['field']}"
    if side.get("error") and outcome(side) != ABSORBED:
        text += f" ({side['error'].splitlines()[0][:160]})"
    return text


@dataclass
class SaturationVerdict:
    env: str
    saturation: str
    category: str
    baseline: str
    candidate: str
    why: str = ""

    def figure(self) -> str:
        head = f"{self.env}: {self.category} with the policy server saturated ({self.saturation})"
        if self.category == LoadCorrectness.HOLDS:
            return f"{head}: {self.candidate}"
        return f"{head}: {self.why or self.candidate} (baseline: {self.baseline})"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def judge_saturation(record: dict[str, Any]) -> tuple[list[SaturationVerdict], list[str]]:
    """Every environment under every way of saturating that both refs ran, and what could not be judged (a side whose
    worker failed the command: never a pass)."""
    limits = record.get("saturated", {})
    max_attempts, recover_s = int(limits.get("max_attempts", 10)), float(limits.get("recover_s", 30.0))
    found, unjudged = [], []
    for name, sides in sorted(record.get("saturation", {}).items()):
        broken = [
            f"{side}: {sides.get(side, {}).get('error', 'no answer')}"
            for side in (BASELINE, CANDIDATE)
            if "envs" not in sides.get(side, {})
        ]
        if broken:
            unjudged.append(f"saturation {name}: not judged ({'; '.join(broken)})")
            continue
        base_envs, cand_envs = sides[BASELINE]["envs"], sides[CANDIDATE]["envs"]
        for env in sorted(set(base_envs) | set(cand_envs)):
            if env not in base_envs or env not in cand_envs:
                unjudged.append(f"{env}: saturation {name}: ran on one ref only")
                continue
            found.append(compare(env, name, base_envs[env], cand_envs[env], max_attempts, recover_s))
    return found, unjudged


def compare(env: str, name: str, base: dict, cand: dict, max_attempts: int, recover_s: float) -> SaturationVerdict:
    b, c = outcome(base), outcome(cand)
    why = []
    if SEVERITY[c] > SEVERITY[b]:
        why.append(f"{c} where the baseline {b}")
    if cand.get("max_attempts", 0) > max_attempts >= base.get("max_attempts", 0):
        why.append(
            f"one call took {cand['max_attempts']} attempts (over {max_attempts}; the baseline's most "
            f"{base.get('max_attempts', 0)})"
        )
    if cand.get("ended_after_window_s", 0) > recover_s >= base.get("ended_after_window_s", 0):
        why.append(f"ended {cand['ended_after_window_s']:.0f} s after the window (over {recover_s:g} s)")
    if why:
        category = LoadCorrectness.REGRESSED
    elif SEVERITY[c] > SEVERITY[ABSORBED] and SEVERITY[c] > SEVERITY[FAILED] and SEVERITY[c] == SEVERITY[b]:
        category = LoadCorrectness.SAME_FAIL
    elif SEVERITY[c] < SEVERITY[b]:
        category = LoadCorrectness.FIXED
    else:
        category = LoadCorrectness.HOLDS
    return SaturationVerdict(env, name, category, describe(base), describe(cand), "; ".join(why))
