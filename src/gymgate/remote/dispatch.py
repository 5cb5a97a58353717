"""The Ray driver of a dispatch: one `UnitRunner` actor per unit, placed by the cluster's resources (a `gymgate`
resource per unit slot, CPUs and memory the unit needs, spread over nodes), each running its unit on its node
(remote/node.py); what their run folders write streams into the caller's copies; a unit whose node or actor dies
runs once more elsewhere, else it is reported unjudged; a stop reaches every unit within its bound.

Every actor of a dispatch lives in the dispatch's own namespace (`gymgate-<user>-<id>`): two dispatches on one
cluster never see or stop each other's units. No actor is detached: a driver that dies takes its units with it, and
each unit's stop (and its node's sweep by the unit's marker) leaves nothing running."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate.locations import cache_dir
from gymgate.remote import node, units
from gymgate.remote.transfer import receive as write_back
from gymgate.remote.units import Unit, payloads

GYMGATE_RESOURCE = "gymgate"  # an operator grants it per node: how many units that node runs at once
POLL_S = 1.0
STOP_GRACE_S = 90.0  # a unit's own stop (gymgate's: its Gyms stopped and swept) before its actor is killed
PLACE_TIMEOUT_S = 600.0  # a unit the cluster cannot place (no node with the resources) within this: unjudged
LOG_TAIL_LINES = 20  # of a unit's log on its node, sent back when its command ends: why a refused unit was refused
# The outcome of a unit as the caller reads it (the verdict is the caller's, from the run folder).
DONE, UNJUDGED, STOPPED = "done", "unjudged", "stopped"


def namespace(dispatch_id: str | None = None) -> str:
    """The dispatch's own namespace: its user and a fresh id (another dispatch, the same user's too, differs)."""
    return f"gymgate-{getpass.getuser()}-{dispatch_id or uuid.uuid4().hex[:12]}"


class UnitRunner:
    """One unit on one node (a Ray actor; the methods run on the node). Knows nothing of gymgate beyond node.py."""

    def __init__(self, unit_id: str, cache: str, scratch: str):
        import ray  # noqa: PLC0415 - pin environment only (Ray)

        # A unit's scratch is its dispatch's and its own: a unit of another dispatch (the same name, another
        # namespace) never finds this one's run folder.
        where = Path(scratch) / ray.get_runtime_context().namespace / unit_id
        self.unit_id, self.cache, self.scratch = unit_id, Path(cache) if cache else cache_dir(), where
        self.process: node.UnitProcess | None = None

    def where(self) -> dict[str, Any]:
        import ray  # noqa: PLC0415 - pin environment only (Ray)

        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "pid": os.getpid(), "host": os.uname().nodename}

    def start(
        self,
        blob: bytes,
        digest: str,
        spec: dict,
        program: list[str] | None = None,
        extra: dict | None = None,
        *sources: bytes,
    ) -> int:
        """Materialise the checkout (and each Gym source a run of the spec names by its `payload`, when the ref is a
        tree, a commit or a wheel: `sources` in the order units.payloads gives; its place goes into that run's spec
        as `source_path`), build gymgate's environment from its lock, start `gymgate unit SPEC` (or `program unit
        SPEC`, a test's stand-in for gymgate run inside the checkout) writing its run folder into the unit's
        scratch."""
        checkout = node.materialise(blob, digest, self.cache)
        spec = json.loads(json.dumps(spec))  # filled in below: the caller's copy stays as it was sent
        packed = payloads(spec)
        if len(sources) != len(packed):
            raise node.Refused(f"a unit whose refs travel as {len(packed)} pack(s) came with {len(sources)}")
        for run, source in zip(packed, sources, strict=True):
            run["source_path"] = str(node.materialise(source, run["payload"], self.cache, node.SOURCES))
        try:
            self.scratch.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise node.Refused(f"{self.scratch} exists: this unit already ran on this node") from None
        spec_file, run_dir = self.scratch / "spec.json", self.scratch / "run"
        spec_file.write_text(json.dumps(spec))
        program = program or [str(node.harness(checkout, self.cache))]
        self.process = node.UnitProcess(self.unit_id, run_dir)
        environ = {**os.environ, **(extra or {}), "GYMGATE_REPO_ROOT": str(checkout), "GYMGATE_CACHE": str(self.cache)}
        argv = [*program, *units.command(str(spec_file), str(run_dir))]
        # This actor's process is watched: killed (by the driver, its death, the memory monitor), its unit goes too.
        return self.process.start(argv, environ, checkout, self.log, watch=os.getpid())

    @property
    def log(self) -> Path:
        return self.scratch / "unit.log"

    def poll(self) -> tuple[int | None, dict[str, bytes], str]:
        """Its command's exit code (None while it runs), the run files new or changed since the last poll, and
        once it has ended the last lines of its log."""
        assert self.process is not None
        code = self.process.returncode()
        files = self.process.changed()  # read after the code: a finished run's last files are in this batch
        tail = ""
        if code is not None and self.log.is_file():
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        return code, files, tail

    def stop(self, grace_s: float) -> list[int]:
        return self.process.stop(grace_s) if self.process else []

    def discard(self) -> None:
        """Its run folder, once the caller has all of it (its log stays, for the node's operator)."""
        shutil.rmtree(self.scratch / "run", ignore_errors=True)


@dataclass
class Placed:
    unit: Unit
    actor: Any
    started: Any = None  # the start call's ObjectRef, until it has returned
    since: float = field(default_factory=time.monotonic)  # when it was placed: PLACE_TIMEOUT_S counts from here


@dataclass
class Dispatch:
    """One dispatch: its units, where each ran and how it ended (its files are in the caller's copies)."""

    namespace: str
    outcomes: dict[str, str] = field(default_factory=dict)  # unit name -> DONE, UNJUDGED, STOPPED
    reasons: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)  # unit name -> the node id it ran on
    codes: dict[str, int] = field(default_factory=dict)


def run_units(
    units: Sequence[Unit],
    checkout: tuple[str, bytes],
    into: Callable[[Unit], Path],
    sources: dict[str, bytes] | None = None,
    *,
    cache: str = "",
    scratch: str,
    num_cpus: float = 1,
    memory: int = 0,
    program: list[str] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    receive: Callable[[dict[str, bytes], Path], object] | None = None,
    environ: dict[str, str] | None = None,
    say: Callable[[str], object] = lambda line: print(line, flush=True),
) -> Dispatch:
    """Run every unit on the cluster this driver is connected to (`ray.init(address, namespace=…)` done by the
    caller) and mirror each unit's run folder into `into(unit)` (the same folder for each attempt: emptied when
    the unit runs again). `sources`: the packed Gym sources units name by digest (a spec's `payload`), each put into
    the cluster's store once. `cache` (none: each node's own, GYMGATE_CACHE or its
    default) is where a node keeps checkouts and environments; `environ` adds variables to the units' commands.
    `stopping()` turning true stops every unit (its own stop first, then its actor). A unit whose actor or node died
    runs once more (attempt 2, elsewhere when the cluster can); a second loss, or a unit that cannot be placed, is
    unjudged."""
    import ray  # noqa: PLC0415 - pin environment only (Ray)
    import ray.exceptions  # noqa: PLC0415 - pin environment only (Ray)

    receive = receive or write_back
    context = ray.get_runtime_context()
    result = Dispatch(context.namespace)
    digest, blob = checkout
    blob_ref = ray.put(blob)
    source_refs = {key: ray.put(data) for key, data in (sources or {}).items()}
    options: dict[str, Any] = {"num_cpus": num_cpus, "resources": {GYMGATE_RESOURCE: 1}, "max_restarts": 0}
    if memory:
        options["memory"] = memory
    options |= {"scheduling_strategy": "SPREAD", "max_concurrency": 4}
    runner = ray.remote(UnitRunner)

    def place(unit: Unit) -> Placed:
        actor = runner.options(name=unit.name, **options).remote(unit.name, cache, scratch)
        placed = Placed(unit, actor)
        packed = [source_refs[run["payload"]] for run in payloads(unit.spec)]
        placed.started = actor.start.remote(blob_ref, digest, unit.spec, program, environ, *packed)
        return placed

    active = [place(unit) for unit in units]
    while active:
        if stopping():
            _stop_all(active, result)
            break
        for placed in list(active):
            name = placed.unit.name
            try:
                if placed.started is not None:
                    ready, _ = ray.wait([placed.started], timeout=0)
                    if not ready:
                        if time.monotonic() - placed.since > PLACE_TIMEOUT_S:
                            raise TimeoutError(f"not placed or started within {PLACE_TIMEOUT_S:g} s")
                        continue
                    ray.get(placed.started)  # a node that refused the unit raises here
                    placed.started = None
                    where = ray.get(placed.actor.where.remote(), timeout=120)
                    result.nodes[name] = where["node_id"]
                    say(f"{name}: running on {where['host']} (node {where['node_id'][:12]})")
                code, files, tail = ray.get(placed.actor.poll.remote(), timeout=120)
            except (ray.exceptions.ActorDiedError, ray.exceptions.ActorUnavailableError) as exc:
                active.remove(placed)
                if placed.unit.attempt == 1:
                    shutil.rmtree(into(placed.unit), ignore_errors=True)  # what the lost attempt wrote is not kept
                    again = place(placed.unit.again())
                    active.append(again)
                    result.reasons[name] = f"its actor died ({type(exc).__name__}); ran again as {again.unit.name}"
                    say(f"{name}: {result.reasons[name]}")
                else:
                    result.outcomes[name], result.reasons[name] = UNJUDGED, f"lost twice: {type(exc).__name__}"
                continue
            except Exception as exc:  # noqa: BLE001 - a refused unit, a timeout: never a verdict
                active.remove(placed)
                _kill(placed)
                result.outcomes[name], result.reasons[name] = UNJUDGED, f"{type(exc).__name__}: {exc}"[:600]
                say(f"{name}: unjudged: {result.reasons[name]}")
                continue
            if files:
                receive(files, into(placed.unit))
            if code is not None:
                active.remove(placed)
                # Its sweep (nothing of it outlives it), then its run folder. A node lost now loses no result: the
                # run is all here, and the unit's reaper sweeps whatever its actor leaves.
                with contextlib.suppress(Exception):
                    ray.get(placed.actor.stop.remote(10.0), timeout=60)
                    ray.get(placed.actor.discard.remote(), timeout=60)
                _kill(placed)
                result.outcomes[name], result.codes[name] = DONE, code
                if tail and code not in (0, 1):  # 0 and 1 are verdicts; anything else says why in its log
                    result.reasons[name] = tail
                say(f"{name}: ended with exit {code}")
        time.sleep(POLL_S)
    return result


def _stop_all(active: list[Placed], result: Dispatch) -> None:
    """Each unit's own stop (gymgate's stop path: SIGTERM, its Gyms stopped and swept) at once, then its actor."""
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    calls = {p.unit.name: p.actor.stop.remote(STOP_GRACE_S) for p in active}
    ray.wait(list(calls.values()), num_returns=len(calls), timeout=STOP_GRACE_S + 30)
    for placed in active:
        _kill(placed)
        result.outcomes[placed.unit.name] = STOPPED


def _kill(placed: Placed) -> None:
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    with contextlib.suppress(Exception):  # already gone
        ray.kill(placed.actor, no_restart=True)
