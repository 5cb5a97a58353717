"""`accept --load --ray-address`: the load comparison as units on a Ray cluster. A unit is both refs on one node
(remote/unit_spec.LoadUnitSpec) for a share of the environments (sweep.toml [cluster]); its node measures them as a
local load run does (load/interleave.measure) and its folder streams back here; the caller merges what came back
(load/merge.py) and judges it with this checkout's thresholds and this pair's acknowledgements. A unit that did not
bring its environments back leaves them unjudged (exit 3), never passed."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from gymgate.compare.acks import LoadAck
from gymgate.errors import InfraError
from gymgate.harness.cluster import ray_python, unit_spec
from gymgate.harness.run import prepare
from gymgate.harness.run_options import RunOptions
from gymgate.load import declared
from gymgate.load.interleave import RECORD, LoadRun, finish, measure, new_record
from gymgate.load.measures import SIDES
from gymgate.load.merge import merge_unit
from gymgate.pathid import PathId
from gymgate.refs.source import GymSource
from gymgate.remote import dispatch
from gymgate.remote.caller import run_dispatch
from gymgate.remote.unit_spec import LoadUnitSpec
from gymgate.remote.units import Unit

UNITS = "units"  # under the load folder: each unit's run folder as its node wrote it


def shares(envs: list[str], per_unit: int) -> list[list[str]]:
    """The environments in units of `per_unit`, in their order."""
    return [envs[i : i + per_unit] for i in range(0, len(envs), per_unit)]


def load_on_cluster(
    sources: dict[str, GymSource], envs: list[str], opts: RunOptions, out: Path, acks: list[LoadAck] | None
) -> LoadRun:
    """Every share of `envs` a unit on the cluster at `opts.ray_address`, all dispatched at once; the merged record
    judged here, in `out`/load."""
    folder = out / "load"
    sent: list[Unit] = []
    packs: dict[str, bytes] = {}
    for index, share in enumerate(shares(envs, declared.sweep().envs_per_unit)):
        # The unit's run options are its share's: its workers start those environments' Gyms and nothing else.
        narrowed = replace(opts, envs=list(share), plan=tuple(p for p in opts.plan if PathId(p["id"]).env in share))
        sides = {}
        for side in SIDES:
            run, packed = unit_spec(sources[side], [], narrowed)
            sides[side] = run.to_json()
            if packed:
                packs[packed[0]] = packed[1]
        unit = LoadUnitSpec(sides, share, narrowed.to_json())
        sent.append(Unit(f"load-{index + 1}-{'+'.join(share)}", unit.to_json()))
    into = {unit.label: folder / UNITS / unit.label for unit in sent}
    record = new_record(sources, (), (), opts.load_latency)
    print(f"load: {len(sent)} unit(s) on the cluster {opts.ray_address}: {', '.join(into)}", flush=True)
    try:
        done = run_dispatch(opts.ray_address, opts.ray_python or ray_python(), sent, into, packs)
        ended = {u.label: _ended(u, done) for u in sent}
    except InfraError as exc:  # the cluster went away: the driver could not say what its units did (all unjudged)
        ended = {u.label: f"{type(exc).__name__}: {exc}" for u in sent}
    for unit in sent:
        part = into[unit.label] / "load" / RECORD
        measured = json.loads(part.read_text()) if part.is_file() else None
        merge_unit(record, unit.label, unit.spec["envs"], measured, ended[unit.label])
    record.setdefault("finished", time.time())
    return finish(folder, record, acks)


def _ended(unit: Unit, done) -> str:
    """How the unit ended, as the dispatch reported it (its second attempt's, when it ran again)."""
    name = done.ran_as(unit)
    outcome, reason = done.outcomes.get(name, "never reported"), done.reasons.get(name, "")
    code = done.codes.get(name)
    if outcome == dispatch.DONE and code == 0:
        return f"{name} measured"
    return f"{name} {outcome}" + (f" (exit {code})" if code is not None else "") + (f": {reason}" if reason else "")


def load_unit(spec: LoadUnitSpec, into: Path) -> int:
    """What a node runs for a load unit (`gymgate unit SPEC --run-dir DIR`): both refs' environments built here,
    each refused unless it is the caller's, then the unit's environments measured under load into DIR/load; the
    caller judges. Exit 0 when the measuring ran to its end (the verdict is not this node's to give)."""
    opts = RunOptions.from_json(spec.options, runs_dir=into.parent)
    sources, prepared = {}, {}
    for side in SIDES:
        run = spec.side(side)
        sources[side] = run.resolved()
        prepared[side] = prepare(sources[side], opts.wide)
        run.admit(prepared[side])
    measure(sources, prepared, spec.envs, opts, into)
    return 0
