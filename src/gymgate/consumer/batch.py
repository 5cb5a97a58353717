"""A completed group of rollouts -> NeMo RL's final batch and rollout metrics, value for value as RL computes them
(a family's mean over the group's size, the *sample* stddev — NaN for one value —, its histogram's values, the
three percentiles RL logs), so a check asserts what RL produces."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import numpy as np

from gymgate.rl.profile import Profile
from gymgate.rl.profile import load as load_profile

REWARD_REL_TOL, REWARD_ABS_TOL = 1e-5, 1e-6


HISTOGRAM = "histogram"  # RL logs a histogram object per family; gymgate keeps the values it is drawn from
PERCENTILES = (("turns_per_sample", 95), ("turns_per_sample", 99), ("max_gen_tokens_per_turn", 95))


def _family(name: str, values: list[float], size: int | None = None) -> dict[str, Any]:
    """One family's statistics as RL logs them: the mean divides by the group's size (`size`: every sample, also
    those without a numeric value), the stddev is the sample one (NaN for fewer than two values)."""
    if not values:
        return {}
    return {
        f"{name}/mean": float(sum(values) / (size or len(values))),
        f"{name}/max": float(max(values)),
        f"{name}/min": float(min(values)),
        f"{name}/median": float(statistics.median(values)),
        f"{name}/stddev": float(statistics.stdev(values)) if len(values) > 1 else math.nan,
        f"{name}/{HISTOGRAM}": [float(v) for v in values],
    }


def percentile(values: list[float], p: int) -> float:
    """RL's percentile: the sorted values at index min(n*p/100, n-1); 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(int(len(ordered) * p / 100), len(ordered) - 1)])


def reward_components(full: dict[str, Any]) -> dict[str, float] | None:
    """A result's reward components, or None for a single-reward result: RL treats an absent, null *or empty*
    `reward_components` alike."""
    components = full.get("reward_components")
    if not components:
        return None
    return {str(k): float(v) for k, v in components.items()}


def validate_reward_components(results: list[dict[str, Any]]) -> None:
    for index, result in enumerate(results):
        components = reward_components(result["full_result"])
        if components is None:
            continue
        total = sum(float(v) for v in components.values())
        reward = float(result["full_result"]["reward"])
        if not math.isclose(total, reward, rel_tol=REWARD_REL_TOL, abs_tol=REWARD_ABS_TOL):
            raise ValueError(f"result {index}: reward {reward} != sum of reward_components {total}")


def task_index_rule(rows: list[dict[str, Any]]) -> None:
    """RL's rule for a prompt group: when its first row carries `_ng_task_index`, every row carries the same value
    (a row without one breaks it too); when the first does not, the rule does not apply."""
    if not rows or "_ng_task_index" not in rows[0]:
        return
    first = int(rows[0]["_ng_task_index"])
    found = [row.get("_ng_task_index") for row in rows]
    if any(index is None or int(index) != first for index in found):
        raise ValueError(f"rows of one group carry different _ng_task_index values: {found}")


def final_batch(
    rows: list[dict[str, Any]],
    results: list[dict[str, Any]],
    loss_multiplier: np.ndarray,
    pad_token_id: int,
    max_total_len: int,
    profile: Profile | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    profile = profile or load_profile()
    validate_reward_components(results)
    task_index_rule(rows)
    logs = [r["message_log"] for r in results]
    for row, result in zip(rows, results, strict=True):
        result["agent_ref"] = row.get("agent_ref")  # onto the outer result: RL leaves full_result as Gym sent it
    first_prompts = [log[0]["token_ids"] for log in logs]
    width = max(len(p) for p in first_prompts)
    input_ids = np.full((len(logs), width), pad_token_id, dtype=np.int64)
    for i, prompt in enumerate(first_prompts):
        input_ids[i, : len(prompt)] = prompt
    totals = [sum(len(m["token_ids"]) for m in log) for log in logs]
    gen_per_turn = [[len(m["token_ids"]) for m in log if m["role"] == "assistant"] for log in logs]
    rewards = [float(r["full_result"]["reward"]) for r in results]
    masked = np.array([bool(profile.masked_at(r["full_result"])) for r in results], dtype=bool)
    batch = {
        "agent_ref": [row.get("agent_ref") for row in rows],
        "message_log": logs,
        "length": np.array([len(p) for p in first_prompts], dtype=np.int64),
        # RL's rollout keeps the rows' loss multiplier and adds the mask beside it: GRPO zeroes a masked sample's
        # multiplier later (mask_env_flagged_samples), outside what a rollout returns.
        "loss_multiplier": loss_multiplier,
        "mask_sample": masked,
        "total_reward": np.array(rewards, dtype=np.float32),
        "truncated": np.array([t == max_total_len for t in totals], dtype=bool),
        "input_ids": input_ids,
    }
    components = [reward_components(r["full_result"]) or {} for r in results]
    for name in sorted({k for c in components for k in c}):
        batch[f"reward/{name}"] = np.array([c.get(name, 0.0) for c in components], dtype=np.float32)
    size = len(results)
    families = {
        "turns_per_sample": [len(g) for g in gen_per_turn],
        "total_tokens_per_sample": totals,
        "gen_tokens_per_sample": [sum(g) for g in gen_per_turn],
        "max_gen_tokens_per_turn": [max(g) for g in gen_per_turn],
        "total_reward": rewards,
    }
    metrics: dict[str, Any] = {}
    for name, values in families.items():
        metrics.update(_family(name, values, size))
    metrics.update({f"{name}/p{p}": percentile(families[name], p) for name, p in PERCENTILES})
    truncated = batch["truncated"].tolist()
    metrics["natural_termination_rate"] = 1.0 - sum(truncated) / len(truncated)
    metrics["truncation_rate"] = sum(truncated) / len(truncated)
    metrics["mean_gen_tokens_per_sample"] = metrics["gen_tokens_per_sample/mean"]
    for agent, full in by_agent(rows, results).items():
        # RL keys a family by the agent's first result's keys, numeric in any result (`_`-prefixed ones too).
        for key in full[0]:
            values = [float(f[key]) for f in full if isinstance(f.get(key), bool | int | float)]
            metrics.update(_family(f"{agent}/{key}", values, len(full)))
    return batch, metrics


def by_agent(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each agent's full results (RL groups its per-agent metrics by the row's agent_ref name)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row, result in zip(rows, results, strict=True):
        grouped.setdefault((row.get("agent_ref") or {}).get("name", "unknown"), []).append(result["full_result"])
    return grouped


def full_result_tables(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, list[str]]:
    """RL's `{agent}/full_result` tables (log_full_result_tables): each sample's full result as one JSON row."""
    return {
        agent: [json.dumps(f, separators=(",", ":")) for f in full] for agent, full in by_agent(rows, results).items()
    }
