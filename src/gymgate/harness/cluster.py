"""Refs run on a Ray cluster the way `run_here` runs them here (harness/executor.py's seam for --ray-address): each run a
unit (remote/unit_spec.py), all of a command's units dispatched at once, each unit's run folder streamed into the
caller's runs/ as its node writes it, then judged here exactly as a local run is. The cache is the caller's: a run
whose inputs are stored is not sent; a node's run is stored like a local one.

A pin or an index version is resolved by its name on the node; a local tree, a git commit or a wheel travels as a
pack named by its digest. What is never a verdict: a unit that was refused, lost twice, never placed or stopped:
its run is marked incomplete with the reason, so the command reports it unjudged (exit 3), as it would an
interrupted local run."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from gymgate.compare.reuse import inputs_digest, shared_digest
from gymgate.envs.project import project_dir
from gymgate.envs.python import Interpreter, already_here
from gymgate.errors import EXIT_UNJUDGED, GymgateError, UsageError
from gymgate.harness.progress import Progress
from gymgate.harness.run import judged_result, open_run, prepare, served
from gymgate.harness.run_options import RefRun, RunOptions
from gymgate.pathid import PathId
from gymgate.refs.local import sha256_file
from gymgate.refs.pins import load_pin, pins_in_order
from gymgate.refs.source import GymSource
from gymgate.remote import dispatch
from gymgate.remote.caller import Outcome, run_dispatch
from gymgate.remote.unit_spec import UnitSpec, source_pack
from gymgate.remote.units import Unit
from gymgate.results import RunResult
from gymgate.runfolder import RunFolder, RunMark, new_run_id


def run_remote(calls: Sequence[RefRun]) -> list[RunResult]:
    """Each call's result, in order: served from the cache, or run on the cluster (every unsent one at once)."""
    results: dict[int, RunResult] = {}
    sent: dict[int, tuple[Unit, RunFolder]] = {}
    sources: dict[str, bytes] = {}
    for index, call in enumerate(calls):
        lock, python = expectation(call.source, call.opts.wide)
        if call.reuse and lock is not None and python is not None:
            stored = served(inputs_of(call, lock, python), call.opts)
            if stored is not None:
                results[index] = judged_result(stored, 0, call.expected, cached=True)
                continue
        if call.title:
            print(f"== {call.title}", flush=True)
        spec, packed = unit_spec(call.source, call.expected, call.opts, call.narrowed)
        if packed:
            sources[packed[0]] = packed[1]
        run = open_run(call.source, call.opts, spec.run_id, call.run_dir)
        alone = sum(c.source.name == call.source.name for c in calls) == 1
        sent[index] = (Unit(call.source.name if alone else f"{call.source.name}-{index}", spec.to_json()), run)
    if sent:
        done = _dispatch(calls[0].opts, sent, sources)
        for index, (unit, run) in sent.items():
            results[index] = _judged(run, unit, done, calls[index].expected)
    return [results[index] for index in range(len(calls))]


def unit_spec(
    source: GymSource, expected: Sequence[str], opts: RunOptions, narrowed: bool = False
) -> tuple[UnitSpec, tuple[str, bytes] | None]:
    """A run of `source` as a node receives it (a fresh run id), and its pack when the ref cannot be resolved there
    by name (a tree, a commit, a wheel: sent whole)."""
    lock, python = expectation(source, opts.wide)
    packed = source_pack(source)
    spec = UnitSpec(
        source.to_json(),
        list(expected),
        opts.to_json(),
        new_run_id(),
        narrowed,
        sha256_file(lock) if lock is not None else "",
        python.version if python is not None else "",
        payload=packed[0] if packed else "",
    )
    return spec, packed


def expectation(source: GymSource, wide: bool = False) -> tuple[Path | None, Interpreter | None]:
    """What this machine would build the ref with: a pin's committed lock (every other project is generated and
    locked where it is built, its lock naming where gymgate and the source lie: the node locks its own, as this
    machine does), and the interpreter it would choose (none here: the node provides one, as it would)."""

    python = already_here(source.requires_python)
    if not source.pinned or wide:
        return None, python
    return project_dir(source) / "uv.lock", python


def inputs_of(call: RefRun, lock: Path, python: Interpreter) -> str:
    """The cache key the node's run carries when its interpreter is this machine's build (compare/reuse.py)."""

    shared = shared_digest(call.source.digest, lock, f"{python.version} {python.build}")
    return inputs_digest(
        shared, call.expected, call.opts.attempts, call.opts.paths_of(call.expected), call.opts.consumer
    )


def _dispatch(opts: RunOptions, sent: dict[int, tuple[Unit, RunFolder]], sources: dict[str, bytes]) -> Outcome:
    units = [unit for unit, _ in sent.values()]
    print(f"== cluster {opts.ray_address}: {len(units)} unit(s): {', '.join(u.label for u in units)}", flush=True)
    into = {unit.label: run.root for unit, run in sent.values()}
    only = next(iter(sent.values())) if len(sent) == 1 else None
    watched = nullcontext()
    if only is not None:  # one run: the live view a local run shows, from the folder the node's files land in
        expected = only[0].spec["expected"]
        watched = Progress(only[1], total_paths=len(expected), total_envs=len({PathId(p).env for p in expected}))
    try:
        with watched:
            return run_dispatch(opts.ray_address, opts.ray_python or ray_python(), units, into, sources)
    except KeyboardInterrupt:
        for unit, run in sent.values():
            _mark_unjudged(run, unit, "interrupted (the cluster's units were stopped)")
        raise
    except GymgateError as exc:  # the cluster refused or went away: the driver could not say what its units did
        for unit, run in sent.values():
            _mark_unjudged(run, unit, str(exc))
        raise


def _judged(run: RunFolder, unit: Unit, done: Outcome, expected: list[str]) -> RunResult:
    """The node's run judged here; a unit that did not end on its own is marked incomplete with why."""
    name = done.ran_as(unit)
    outcome, reason = done.outcomes.get(name, "never reported"), done.reasons.get(name, "")
    mark = run.mark()
    if mark is not None and mark.run_id != unit.spec["run_id"]:  # never judge a run this unit did not make
        outcome, reason = "sent another run", f"its run folder is run {mark.run_id!r}, not {unit.spec['run_id']!r}"
        mark = None
    if outcome == dispatch.DONE and mark is not None and mark.broken:
        return judged_result(run, 1, expected, broken=mark.broken)
    if outcome == dispatch.DONE and mark is not None and mark.pytest_exit is not None:
        return judged_result(run, mark.pytest_exit, expected)
    why = f"unit {name} {outcome}" + (f": {reason}" if reason else "") + f" (exit {done.codes.get(name, '-')})"
    _mark_unjudged(run, unit, why)
    return judged_result(run, EXIT_UNJUDGED, expected)


def _mark_unjudged(run: RunFolder, unit: Unit, why: str) -> None:
    mark = run.mark() or RunMark(expected=list(unit.spec["expected"]), run_id=unit.spec["run_id"])
    mark.complete, mark.incomplete = False, f"on the cluster: {why}"
    run.write_mark(mark)


def ray_python() -> str:
    """The driver's interpreter when --ray-python is not given: the newest pin's environment (its Ray)."""

    newest = load_pin(pins_in_order()[-1])
    if newest is None:
        raise UsageError("no pin to take Ray from: give --ray-python (a Python with the cluster's Ray)")
    return str(prepare(newest).python)
