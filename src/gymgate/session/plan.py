"""Which xdist worker owns which environment.

Both sides compute the same plan from the same inputs: the controller's scheduler sends an
environment's paths only to its owner, and each worker starts the Gyms it owns, all at once, as soon
as it comes up. Environments are dealt heaviest first (start-up cost), so workers finish together.
"""

from __future__ import annotations

# Relative start-up + rollout cost; unknown environments count 1.0.
WEIGHTS = {
    "code_gen": 1.6,
    "workplace_assistant": 1.3,
    "single_step_tool_use_with_argument_comparison": 1.2,
    "structured_outputs_v4": 1.1,
}


def worker_ids(count: int) -> list[str]:
    return [f"gw{i}" for i in range(count)]


def plan(envs: list[str], workers: int) -> dict[str, str]:
    """env name -> worker id ("gw<i>"); with no xdist (workers <= 1) everything is "master"/"gw0"."""
    live = max(1, min(workers, len(envs)))
    load = dict.fromkeys(worker_ids(live), 0.0)
    owner: dict[str, str] = {}
    # Canonical order (weight, then name): the scheduler and every worker must agree whatever order they list in.
    for env in sorted(set(envs), key=lambda e: (-WEIGHTS.get(e, 1.0), e)):
        worker = min(load, key=lambda w: (load[w], w))
        owner[env] = worker
        load[worker] += WEIGHTS.get(env, 1.0)
    return owner


def owned_by(envs: list[str], workers: int, worker: str) -> list[str]:
    assignment = plan(envs, workers)
    return [e for e in envs if assignment[e] == worker]
