"""The processor (row -> DatumSpec) and the collate function NeMo RL applies to Gym rows.

No tokenization happens before the rollout: the DatumSpec carries one empty placeholder user message.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np


def process_datum(datum: dict[str, str], idx: int) -> dict[str, Any]:
    return {
        "message_log": [{"role": "user", "content": "", "token_ids": np.empty(0, dtype=np.float32)}],
        "length": 0,
        "extra_env_info": json.loads(datum["extra_env_info"]),
        "loss_multiplier": 1.0,
        "idx": idx,
        "task_name": datum["task_name"],
    }


def collate(specs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "message_log": [s["message_log"] for s in specs],
        "length": np.array([s["length"] for s in specs], dtype=np.int64),
        "loss_multiplier": np.array([s["loss_multiplier"] for s in specs], dtype=np.float32),
        "extra_env_info": [s["extra_env_info"] for s in specs],
        "task_name": [s["task_name"] for s in specs],
        "idx": [s["idx"] for s in specs],
        "batch_max_length": np.zeros(len(specs), dtype=np.int64),
        "stop_strings": [None] * len(specs),
    }


def repeat_interleave(batch: dict[str, Any], n: int) -> dict[str, Any]:
    """GRPO's repeat: every non-array element deep-copied per repeat, so each generation owns its row."""
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, np.ndarray):
            out[key] = np.repeat(value, n, axis=0)
        else:
            out[key] = [copy.deepcopy(v) for v in value for _ in range(n)]
    return out
