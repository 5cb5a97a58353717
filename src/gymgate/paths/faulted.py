"""An environment's fault paths: its accepted case run again with one call failing, once per selected fault of the
catalogue (gymgate.faults) that names a call the case makes."""

from __future__ import annotations

from dataclasses import replace

from gymgate.faults import DEFAULT
from gymgate.faults.spec import selected
from gymgate.pathid import MODES, PathId
from gymgate.paths.spec import FAULT, PathSpec


def fault_paths(case: list[PathSpec], selection: str = DEFAULT) -> list[PathSpec]:
    """From an environment's case paths (paths/handwritten.py); none without a case (it runs its recordings only).
    `selection`: which faults (gymgate.faults.spec.SELECTIONS)."""
    accepted = next((p for p in case if p.name == MODES[0]), None)
    if accepted is None:
        return []
    return [
        replace(accepted, id=PathId.of(accepted.env.name, fault.path_name), origin=FAULT, fault=fault)
        for fault in selected(selection)
        if fault.applies(accepted.script)
    ]
