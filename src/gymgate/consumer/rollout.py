"""The sync rollout driver: in-place row overrides, rows streamed from the Gym actor as they complete,
row indices validated, the group postprocessed into the final batch.

Fewer rollouts than requested is an error, never a silent short batch.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gymgate.consumer.batch import final_batch
from gymgate.consumer.errors import GymDied, RejectedResult, RolloutTimeout, RowIndexError
from gymgate.rl import penalties
from gymgate.rl.profile import Profile, Recipe
from gymgate.rl.profile import load as load_profile

POLL_S = 1.0  # how often a waiting rollout checks its deadline and the Gym's processes


@dataclass(frozen=True)
class GenerationConfig:
    max_new_tokens: int
    temperature: float
    top_p: float
    top_k: int | None = None
    max_total_sequence_length: int = 131072


def prepare_rows(rows: list[dict[str, Any]], config: GenerationConfig) -> None:
    """NeMo RL's overrides, applied to the caller's row dicts in place (the whole row is the /run body)."""
    for index, row in enumerate(rows):
        params = row.get("responses_create_params")
        if not isinstance(params, dict):
            raise TypeError("Each NeMo-Gym row must contain a responses_create_params dict")
        params["temperature"] = config.temperature
        params["top_p"] = config.top_p
        if params.get("max_output_tokens") is not None:
            params["max_output_tokens"] = min(params["max_output_tokens"], config.max_new_tokens)
        else:
            params["max_output_tokens"] = config.max_new_tokens
        row["_rowidx"] = index


class StreamAccumulator:
    def __init__(self, rows: list[dict[str, Any]]):
        self.rows = rows
        self.results: dict[int, dict[str, Any]] = {}

    def add(self, rowidx: Any, result: dict[str, Any]) -> None:
        if not isinstance(rowidx, int) or isinstance(rowidx, bool):
            raise RowIndexError(f"row index must be an int, got {type(rowidx).__name__} {rowidx!r}")
        if not 0 <= rowidx < len(self.rows):
            raise RowIndexError(f"row index {rowidx} out of range for {len(self.rows)} rows")
        if rowidx in self.results:
            raise RowIndexError(f"duplicate row index {rowidx}")
        self.results[rowidx] = result

    def finish(self) -> list[dict[str, Any]]:
        missing = [i for i in range(len(self.rows)) if i not in self.results]
        if missing:
            raise RowIndexError(
                f"NeMo-Gym returned {len(self.results)} of {len(self.rows)} rollouts: missing row indices {missing}"
            )
        agents = {(r.get("agent_ref") or {}).get("name") for r in self.rows}
        if len(agents) > 1:
            raise RowIndexError(f"Expected one NeMo-Gym agent per prompt group, got {sorted(map(str, agents))}")
        return [self.results[i] for i in range(len(self.rows))]


@dataclass
class RolloutResult:
    final_batch: dict[str, Any]
    rollout_metrics: dict[str, Any]
    results: list[dict[str, Any]]
    timings: dict[str, float]
    # Each row's result as the Gym actor streamed it: seconds from the batch's start (a load run's latencies).
    arrivals: list[float] = field(default_factory=list)
    # What a training recipe (--rl-recipe) makes of each result: the penalties that fire, the reward RL trains on.
    recipe: list[dict[str, Any]] = field(default_factory=list)


def reject_failed(results: list[dict[str, Any]], profile: Profile) -> None:
    """RejectedResult for the first result carrying `_ng_failure_class` when the profile's RL rejects such a result
    before it reads any reward (else RL trains on it, and the checks fail it: acceptance/checks.check_gym_failure)."""
    if not profile.rejects_failure_class:
        return
    for index, result in enumerate(results):
        marked = (result.get("full_result") or {}).get("_ng_failure_class")
        if marked:
            kind = "a transport failure" if marked == "judge_failed" else "a data failure"
            raise RejectedResult(
                f"result {index} carries _ng_failure_class={marked!r}: RL ({profile.name}) rejects it before "
                f"reading its reward, as {kind}",
                str(marked),
            )


def run_rollout_sync(
    actor: Any,
    batch: dict[str, Any],
    tokenizer: Any,
    config: GenerationConfig,
    timeout_s: float | None = None,
    watch: Callable[[], str] | None = None,
    timeout_origin: str = "--path-timeout",
    profile: Profile | None = None,
    recipe: Recipe | None = None,
) -> RolloutResult:
    """Roll the batch out on the Gym actor. Every wait is bounded: past `timeout_s` the rollout raises
    RolloutTimeout (saying where the deadline came from: `timeout_origin`), and `watch` (which names a dead Gym
    process, or returns "") is asked every POLL_S."""
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    rows = batch["extra_env_info"]
    if config.top_k:
        raise ValueError("Top k is not supported")
    if not rows:
        raise ValueError("NeMo-Gym rollout batch must not be empty")
    if len(batch["message_log"]) != len(rows):
        raise ValueError(f"batch has {len(batch['message_log'])} message logs for {len(rows)} rows")
    began = time.monotonic()
    prepare_rows(rows, config)
    accumulator = StreamAccumulator(rows)
    stream = actor.run_rollouts.options(num_returns="streaming").remote(rows)
    first_result_s = None
    arrivals: dict[Any, float] = {}
    for ref in _bounded(stream, began, timeout_s, watch, timeout_origin):
        try:
            rowidx, result, timing = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            raise exc.as_instanceof_cause() from None
        first_result_s = first_result_s or time.monotonic() - began
        accumulator.add(rowidx, result)
        arrivals[rowidx] = float(timing.get("timing/rollout/await_results", time.monotonic() - began))
    results = accumulator.finish()
    rollout_s = time.monotonic() - began
    profile = profile or load_profile()
    reject_failed(results, profile)
    judged = penalties.judged(results, recipe, tokenizer) if recipe is not None else []
    final, metrics = final_batch(
        rows,
        results,
        np.asarray(batch["loss_multiplier"]),
        tokenizer.pad_token_id,
        config.max_total_sequence_length,
        profile,
    )
    timings = {
        "timing/rollout/run_rollouts": rollout_s,
        "timing/rollout/first_result": first_result_s or rollout_s,
        "timing/rollout/total": time.monotonic() - began,
    }
    metrics.update(timings)
    return RolloutResult(final, metrics, results, timings, [arrivals[i] for i in range(len(rows))], judged)


def _bounded(stream: Any, began: float, timeout_s: float | None, watch: Callable[[], str] | None, origin: str):
    """The stream's refs as they become ready; never waits past the deadline or on a dead Gym. The deadline holds
    for the whole batch, results trickling in or not (a Gym that serializes answers one rollout at a time)."""
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    while not stream.is_finished():
        if timeout_s is not None and time.monotonic() - began > timeout_s:
            _cancel(stream)
            raise RolloutTimeout(f"no rollout result within {timeout_s:g} s ({origin})")
        ready, _ = ray.wait([stream], timeout=POLL_S)
        if ready:
            try:
                yield next(stream)
            except StopIteration:
                return
            continue
        dead = watch() if watch else ""
        if dead:
            _cancel(stream)
            raise GymDied(dead)


def _cancel(stream: Any) -> None:
    """Best effort: the caller tears the Gym down next, which ends the task whatever this does."""
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    with contextlib.suppress(Exception):
        ray.cancel(stream)
