"""The units a dispatch sends to a cluster. A unit is one run of one ref (a `run_ref` call: harness/executor.py) on one
node, so the run keeps every single-host assumption Gym makes; the caller compares refs, reruns what fails and
writes every report as for local runs. A unit travels as data (its spec, remote/unit_spec.py), never as a command line:
its recordings to replay can outgrow any argv."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

NAME_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Unit:
    label: str  # what the caller calls this run (its ref, or a rerun's attempt of it): unique within a dispatch
    spec: dict[str, Any]  # what the node runs (remote/unit_spec.UnitSpec.to_json()); a test's stand-in reads it too
    attempt: int = 1  # a unit whose node died runs again elsewhere as attempt 2 (remote/dispatch.py)

    @property
    def name(self) -> str:
        """Its actor's name in the dispatch's namespace (readable in `ray list actors`; unique within a dispatch)."""
        return f"unit-{NAME_SAFE.sub('_', self.label)[:60]}-a{self.attempt}"

    def again(self) -> Unit:
        return replace(self, attempt=self.attempt + 1)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "spec": self.spec, "attempt": self.attempt}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Unit:
        return cls(data["label"], data["spec"], int(data.get("attempt", 1)))


def payloads(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The run specs inside a unit's spec whose ref travels as a pack (their `payload`: its digest): the spec itself
    for a run of one ref, each side's for a load unit (both refs of a comparison on one node)."""
    runs = [spec, *spec.get("sides", {}).values()]
    return [run for run in runs if run.get("payload")]


def command(spec_file: str, run_dir: str) -> list[str]:
    """The gymgate command a node runs for a unit (after gymgate itself, or a test's stand-in)."""
    return ["unit", spec_file, "--run-dir", run_dir]
