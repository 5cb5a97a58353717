"""`gymgate unit SPEC --run-dir DIR`: what a cluster node runs for one unit of a --ray-address command
(harness/cluster.py sends it): the spec's run of its ref, exactly as `run_here` runs it on the caller's machine, with
the caller's run id, refused unless the node's ref, lock and interpreter are the caller's (remote/unit_spec.py); or a
load unit's measuring of both refs (harness/load_cluster.py)."""

from __future__ import annotations

from pathlib import Path

from gymgate.errors import UsageError
from gymgate.harness.run import run_here
from gymgate.harness.run_options import RunOptions
from gymgate.remote.unit_spec import LoadUnitSpec, read_spec


def unit_command(spec: Path, run_dir: str | None) -> int:
    """`gymgate unit SPEC --run-dir DIR` (what a cluster node runs): the spec's run of its ref, into DIR, exactly
    as `run_here` runs it on the caller's machine; the exit code is the run's."""
    if run_dir is None:
        raise UsageError("unit: --run-dir is required (the folder the run is written into)")
    unit, into = read_spec(spec), Path(run_dir)
    if isinstance(unit, LoadUnitSpec):
        from gymgate.harness.load_cluster import load_unit  # noqa: PLC0415 - CLI start-up: only a load unit needs it

        return load_unit(unit, into)
    source = unit.resolved()
    opts = RunOptions.from_json(unit.options, runs_dir=into.parent)
    result = run_here(
        source,
        unit.expected,
        opts,
        run_dir=into,
        narrowed=unit.narrowed,
        run_id=unit.run_id,
        admit=unit.admit,
    )
    return result.code
