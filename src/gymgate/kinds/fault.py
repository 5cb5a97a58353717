"""A fault path: an environment's accepted case run again with one call failing as a real model server's fails
(gymgate.faults), once per selected fault that names a call the case makes. The endpoint injects the fault; how
Gym handles it is judged by acceptance/faulted.py."""

from __future__ import annotations

from dataclasses import replace

from gymgate.cases.environments import Environment
from gymgate.consumer.errors import RolloutTimeout
from gymgate.faults import DEFAULT
from gymgate.faults.catalogue import Fault, catalogue, selected
from gymgate.kinds.protocol import CatalogueDetail, PathContext, Planning
from gymgate.pathid import MODES, PathId
from gymgate.paths.spec import PathSpec

NAME = "fault"


def fault_paths(case: list[PathSpec], selection: str = DEFAULT) -> list[PathSpec]:
    """From an environment's case paths (kinds/handwritten.py); none without a case (it runs its recordings only).
    `selection`: which faults (gymgate.faults.catalogue.SELECTIONS)."""
    accepted = next((p for p in case if p.name == MODES[0] and p.of is None), None)
    if accepted is None:
        return []
    return [
        replace(accepted, id=PathId.named(accepted.env.name, NAME, fault=fault.name), of=accepted, detail=fault)
        for fault in selected(selection)
        if fault.applies(accepted.script)
    ]


class FaultKind(CatalogueDetail):
    name = NAME
    catalogue_file = "the fault catalogue (gymgate/faults/faults.toml)"

    def plan(self, env: Environment, planned: list[PathSpec], given: Planning) -> list[PathSpec]:
        return fault_paths(planned, given.selection(self.name))

    def entries(self) -> tuple[Fault, ...]:
        return catalogue().faults

    def injects(self, path: PathSpec) -> Fault:
        return path.detail

    def rollout_raised(self, ctx: PathContext, path: PathSpec, result, seen: list, exc: BaseException) -> bool:
        from gymgate.acceptance import faulted  # noqa: PLC0415 - pin environment only: its checks read numpy arrays

        if not faulted.judge_failure(result, path.detail, seen, exc):
            return False
        faulted.observe(result, seen, None)
        if isinstance(exc, RolloutTimeout) and ctx.discard is not None:
            ctx.discard(path.env.name, f"{path.id}: {exc.category}")  # a hung Gym serves no one
        return True

    def rollout_returned(self, path: PathSpec, result, exchanges: list, processed: dict) -> list | None:
        from gymgate.acceptance import faulted  # noqa: PLC0415 - pin environment only: its checks read numpy arrays

        answered = faulted.judge_row(result, path.detail, exchanges, processed["full_result"])
        faulted.observe(result, exchanges, processed["gym_result"])
        if not answered:
            return None  # the row is judged on what it says of the failure, not on the accepted path's checks
        return [e for e in exchanges if not e.injected]  # the checks read what the model answered


KIND = FaultKind()
