"""`gymgate unit SPEC --run-dir DIR`: what a cluster node runs for one unit of a --ray-address command
(harness/cluster.py sends it): the spec's run of its ref, exactly as `run_here` runs it on the caller's machine, with
the caller's run id, refused unless the node's ref, lock and interpreter are the caller's (remote/spec.py)."""

from __future__ import annotations

from pathlib import Path

from gymgate.errors import UsageError
from gymgate.harness.run import RunOptions, run_here
from gymgate.remote.spec import UnitSpec


def unit_command(args) -> int:
    """`gymgate unit SPEC --run-dir DIR` (what a cluster node runs): the spec's run of its ref, into DIR, exactly
    as `run_here` runs it on the caller's machine; the exit code is the run's."""
    if args.run_dir is None:
        raise UsageError("unit: --run-dir is required (the folder the run is written into)")
    spec, run_dir = UnitSpec.read(args.spec), Path(args.run_dir)
    source = spec.resolved()
    opts = RunOptions.from_json(spec.options, runs_dir=run_dir.parent)
    result = run_here(
        source,
        spec.expected,
        opts,
        run_dir=run_dir,
        narrowed=spec.narrowed,
        run_id=spec.run_id,
        admit=spec.admit,
    )
    return result.code
