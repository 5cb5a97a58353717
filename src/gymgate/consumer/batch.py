"""A completed group of rollouts -> NeMo RL's final batch and rollout metrics."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import numpy as np

REWARD_REL_TOL, REWARD_ABS_TOL = 1e-5, 1e-6


def _family(name: str, values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        f"{name}/mean": float(statistics.fmean(values)),
        f"{name}/max": float(max(values)),
        f"{name}/min": float(min(values)),
        f"{name}/median": float(statistics.median(values)),
        f"{name}/stddev": float(statistics.pstdev(values)),
    }


def validate_reward_components(results: list[dict[str, Any]]) -> None:
    for index, result in enumerate(results):
        components = result["full_result"].get("reward_components")
        if components is None:
            continue
        total = sum(float(v) for v in components.values())
        reward = float(result["full_result"]["reward"])
        if not math.isclose(total, reward, rel_tol=REWARD_REL_TOL, abs_tol=REWARD_ABS_TOL):
            raise ValueError(f"result {index}: reward {reward} != sum of reward_components {total}")


def final_batch(
    rows: list[dict[str, Any]],
    results: list[dict[str, Any]],
    loss_multiplier: np.ndarray,
    pad_token_id: int,
    max_total_len: int,
) -> tuple[dict[str, Any], dict[str, float]]:
    validate_reward_components(results)
    task_indices = {r.get("_ng_task_index") for r in rows if "_ng_task_index" in r}
    if len(task_indices) > 1:
        raise ValueError(f"rows of one group carry different _ng_task_index values: {sorted(task_indices)}")
    logs = [r["message_log"] for r in results]
    for row, result in zip(rows, results, strict=True):
        result["full_result"]["agent_ref"] = row.get("agent_ref")
    first_prompts = [log[0]["token_ids"] for log in logs]
    width = max(len(p) for p in first_prompts)
    input_ids = np.full((len(logs), width), pad_token_id, dtype=np.int64)
    for i, prompt in enumerate(first_prompts):
        input_ids[i, : len(prompt)] = prompt
    totals = [sum(len(m["token_ids"]) for m in log) for log in logs]
    gen_per_turn = [[len(m["token_ids"]) for m in log if m["role"] == "assistant"] for log in logs]
    rewards = [float(r["full_result"]["reward"]) for r in results]
    batch = {
        "agent_ref": [row.get("agent_ref") for row in rows],
        "message_log": logs,
        "length": np.array([len(p) for p in first_prompts], dtype=np.int64),
        "loss_multiplier": loss_multiplier,
        "total_reward": np.array(rewards, dtype=np.float32),
        "truncated": np.array([t == max_total_len for t in totals], dtype=bool),
        "input_ids": input_ids,
    }
    components = sorted({k for r in results for k in (r["full_result"].get("reward_components") or {})})
    for name in components:
        batch[f"reward/{name}"] = np.array(
            [float((r["full_result"].get("reward_components") or {}).get(name, 0.0)) for r in results], dtype=np.float32
        )
    metrics: dict[str, float] = {}
    metrics.update(_family("turns_per_sample", [len(g) for g in gen_per_turn]))
    metrics.update(_family("total_tokens_per_sample", totals))
    metrics.update(_family("gen_tokens_per_sample", [sum(g) for g in gen_per_turn]))
    metrics.update(_family("max_gen_tokens_per_turn", [max(g) for g in gen_per_turn]))
    metrics.update(_family("total_reward", rewards))
    truncated = batch["truncated"].tolist()
    metrics["natural_termination_rate"] = 1.0 - sum(truncated) / len(truncated)
    metrics["truncation_rate"] = sum(truncated) / len(truncated)
    metrics["mean_gen_tokens_per_sample"] = float(statistics.fmean(sum(g) for g in gen_per_turn))
    for agent, full in by_agent(rows, results).items():
        keys = [k for k, v in full[0].items() if isinstance(v, bool | int | float) and not k.startswith("_")]
        for key in keys:
            values = [float(f[key]) for f in full if isinstance(f.get(key), bool | int | float)]
            metrics.update(_family(f"{agent}/{key}", values))
    return batch, metrics


def by_agent(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each agent's full results (RL groups its per-agent metrics by the row's agent_ref name)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row, result in zip(rows, results, strict=True):
        grouped.setdefault((row.get("agent_ref") or {}).get("name", "unknown"), []).append(result["full_result"])
    return grouped


def full_result_tables(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, list[str]]:
    """RL's `{agent}/full_result` tables (log_full_result_tables): each sample's full result as one JSON row."""
    return {agent: [json.dumps(f) for f in full] for agent, full in by_agent(rows, results).items()}
