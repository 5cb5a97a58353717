"""Running one path: Gym row -> dataset -> processor/collate -> Gym services -> rollout -> postprocess,
then every check, into one PathRecord. Infrastructure trouble is an ERROR, never a reward-0 pass or fail.

Whatever its kind, a path runs the same sequence; at each step its kind (gymgate.kinds.protocol.PathKind) is asked
what to do: whether it can run, what it runs with, what the endpoint injects, how a raised or returned rollout is
judged, whose declarations it is held to, and which checks it adds."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gymgate.acceptance import checks
from gymgate.acceptance.expected import judge_params
from gymgate.acceptance.limits import ROLLOUT_TIMING
from gymgate.cases.case import InputDrift, apply_transforms, read_pinned
from gymgate.consumer.batch import full_result_tables
from gymgate.consumer.dataset import load_rows
from gymgate.consumer.errors import (
    GymDied,
    NonContiguousError,
    RejectedResult,
    RolloutDataFailure,
    RolloutError,
    RolloutTimeout,
    RowIndexError,
)
from gymgate.consumer.processor import collate, process_datum
from gymgate.consumer.rollout import GenerationConfig, run_rollout_sync
from gymgate.endpoint.script import Script
from gymgate.endpoint.server import JUDGE, ModelEndpoint
from gymgate.kinds import kind_of
from gymgate.kinds.protocol import Prepared
from gymgate.options import default
from gymgate.outcomes import CONTRACT, ERROR, FAIL, GYM, HARNESS, PASS
from gymgate.paths.spec import PathSpec
from gymgate.recordings import fidelity
from gymgate.rl.profile import Profile, Recipe
from gymgate.rl.profile import load as load_profile
from gymgate.runfolder import PathRecord, RunFolder
from gymgate.services import gym_compat, gymlog
from gymgate.services.ray_cluster import is_ray_failure

# The RL generation overrides: distinctive values, so a parameter that fails to reach the model shows.
GENERATION = GenerationConfig(max_new_tokens=4096, temperature=0.7, top_p=0.95)


@dataclass
class RunContext:
    endpoint: ModelEndpoint
    tokenizer: Any
    gym_root: Path
    run: RunFolder
    gym: dict[str, Any]
    handles: dict[str, Any] = field(default_factory=dict)
    statuses: dict[str, Any] = field(default_factory=dict)
    config: GenerationConfig = GENERATION
    inputs: dict[str, Any] | None = None  # example rows checked once per run (acceptance.setup)
    ensure: Callable[[str], None] | None = None  # waits for (or starts) this environment's Gym
    path_timeout_s: float = default("path_timeout")
    deadlines: dict[str, float] = field(default_factory=dict)  # path id -> its own deadline (from the baseline)
    attempts: int = default("attempts")
    profile: Profile = field(default_factory=load_profile)  # which RL the paths are judged as (gymgate.rl.profile)
    recipe: Recipe | None = None  # a training recipe's reward penalties (--rl-recipe), if asked for
    watch: Callable[[str], str] | None = None  # names a dead process of this environment's Gym, or ""
    discard: Callable[[str, str], None] | None = None  # tears this environment's Gym down (the next path restarts it)
    shared: Callable[[str], str] | None = None  # the shared instance this environment's Gym is up in, or ""
    isolate: Callable[[str], object] | None = None  # its next start is alone; the shared instance serves the others

    def deadline(self, path: str) -> tuple[float, str]:
        """This path's rollout deadline and where it came from: its own (derived from the baseline's measured time,
        acceptance/limits.py) when it has one below --path-timeout, else --path-timeout."""
        own = self.deadlines.get(path)
        if own is None or own >= self.path_timeout_s:
            return self.path_timeout_s, "--path-timeout"
        return own, f"this path's deadline from the baseline's time; --path-timeout {self.path_timeout_s:g} caps it"


def run_path(
    ctx: RunContext, path: PathSpec, script: Script | None = None, into: RunFolder | None = None
) -> PathRecord:
    """`script` replaces the path's own behaviour (negative tests swap answers with it);
    `into` is the run folder the record goes to (default: the run's). The record fails closed: whatever
    raises, wherever, the path is an ERROR with the exception and its trace, never a PASS.
    The path runs `ctx.attempts` times in the same Gym while each attempt runs to its end (PASS or FAIL); the later
    attempts ride in the record (`repeats`), and the comparison diffs them with the first."""
    records: list[PathRecord] = []
    try:
        first = _judged_attempt(ctx, path, script, wait=True, into=records)
        last = first
        for _ in range(1, ctx.attempts):
            if last.outcome not in (PASS, FAIL):
                break  # an attempt that did not run to its end leaves no Gym worth asking again
            last = _judged_attempt(ctx, path, script, wait=False, into=records)
            first.repeats.append(last.to_json())
    finally:
        if records:
            (into or ctx.run).write_record(records[0])
    return records[0]


def _judged_attempt(
    ctx: RunContext, path: PathSpec, script: Script | None, wait: bool, into: list[PathRecord]
) -> PathRecord:
    """One attempt as it is judged: an attempt that errs while its Gym instance is shared with other environments
    may have been broken by a neighbour, so it is run again in an instance of its own, and that one counts (the
    shared one is kept in the record: `alone_after`). The record goes to `into` as soon as it exists."""
    result = _new_record(ctx, path)
    into.append(result)
    instance = _attempt(ctx, path, result, script, wait)
    if not instance or result.outcome != ERROR or ctx.isolate is None:
        return result
    ctx.isolate(path.env.name)  # its next start is alone (already torn down when the error discarded it)
    again = _new_record(ctx, path)
    again.alone_after = {"instance": instance, "outcome": str(result.outcome), "reason": result.reason}
    into[into.index(result)] = again
    _attempt(ctx, path, again, script, wait=True)
    return again


def _new_record(ctx: RunContext, path: PathSpec) -> PathRecord:
    record = PathRecord(path=path.id, env=path.env.name, mode=path.name, gym=ctx.gym)
    if path.recorded is not None:
        record.recording = path.recorded.provenance()
        if path.env.ran_from:  # no case: the report says which of Gym's configurations ran
            record.recording["ran_from"] = path.env.ran_from
    return record


def _attempt(ctx: RunContext, path: PathSpec, result: PathRecord, script: Script | None, wait: bool) -> str:
    """One attempt of the path into `result`; returns the shared Gym instance it ran in ("" for one of its own)."""
    began = time.monotonic()
    stage = "waiting for the Gym"
    instance = ""
    try:
        if wait and ctx.ensure is not None:
            ctx.ensure(path.env.name)  # the Gym's start-up is not the path's time
        instance = ctx.shared(path.env.name) if ctx.shared is not None else ""
        result.timings["gym_wait_s"] = round(time.monotonic() - began, 3)
        began = time.monotonic()
        stage = "running"
        _run(ctx, path, result, script)
    except BaseException as exc:
        # Anything not classified where it happened: Gym's data made the consumer or a check raise (gym), or
        # gymgate itself failed before the path touched Gym (harness). Never a pass.
        blame = GYM if stage == "running" and not is_ray_failure(exc) else HARNESS
        result.error(blame, f"{stage}: {type(exc).__name__}: {exc}\n{_trace(exc)}")
        if not isinstance(exc, Exception):
            raise  # Ctrl-C, exit: the record is still written by run_path
    finally:
        result.timings["path_s"] = round(time.monotonic() - began, 3)
        result.timings["finished_at"] = round(time.time(), 3)
    return instance


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))[-2000:]


def _run(ctx: RunContext, path: PathSpec, result: PathRecord, script: Script | None) -> None:
    env, kind = path.env, kind_of(path.id)
    status = ctx.statuses.get(env.name)
    if status is None:
        result.error(HARNESS, "startup: the environment was never started in this session")
        return
    if status.status == "skipped":
        result.skip(status.reason)
        return
    if status.status != "ready":
        result.error(status.blame or GYM, f"startup: {status.reason}")
        return
    if path.cannot_run:
        kind.cannot_run(path, result)
        return
    result.row = path.row.provenance()
    try:
        raw = _row_of(ctx, path)
    except InputDrift as drift:
        result.fail("input_drift", path.row.file, drift.expected, drift.actual)
        result.complete()
        result.reason = f"input drift: {drift}"
        return
    # The row after the declared transforms: what the checks expect from.
    fed = apply_transforms(json.loads(raw), path.row.transforms, env)
    # A script given in the path's stead (negative tests swap answers with it) runs as it is.
    prepared = Prepared(script) if script is not None else kind.prepare(ctx, path, fed, result, _oracle_run(ctx))
    if prepared is None:
        return
    script = prepared.script
    fed = prepared.row if prepared.row is not None else fed  # a row variant is fed its row in another shape
    data_file = ctx.run.data_file(env.name, path.name)
    data_file.parent.mkdir(parents=True, exist_ok=True)
    data_file.write_text(json.dumps(fed) + "\n")
    batch = collate([process_datum(row, i) for i, row in enumerate(load_rows(data_file))])
    mark = len(ctx.endpoint.exchanges)
    ctx.endpoint.set_script(env.name, script, kind.injects(path))
    handle = ctx.handles[env.name]
    deadline, origin = ctx.deadline(result.path)
    result.timings["deadline_s"] = deadline
    log_mark = gymlog.size(ctx.run.log(env.name))  # the Gym log's causes come after this point
    rollout_began = time.monotonic()
    try:
        rollout = run_rollout_sync(
            handle.actor,
            batch,
            ctx.tokenizer,
            ctx.config,
            timeout_s=deadline,
            timeout_origin=origin,
            watch=(lambda: ctx.watch(env.name)) if ctx.watch else None,
            profile=ctx.profile,
            recipe=ctx.recipe,
        )
    except NonContiguousError as exc:
        result.fail("continuity", f"turn {exc.turn}, position {exc.position}", "contiguous", str(exc)[:600])
        result.complete()
        return
    except RowIndexError as exc:
        result.fail("row_count", "rollouts returned", 1, str(exc))
        result.complete()
        return
    except RejectedResult as exc:  # Gym answered with a row it marked as failed; the profile's RL drops it unread
        seen = ctx.endpoint.exchanges[mark:]
        if not kind.rollout_raised(ctx, path, result, seen, exc):
            reason = checks.rl_does(checks.FAILURE_CLASS, "", ctx.profile)
            result.fail("gym_failure", checks.FAILURE_CLASS, None, f"{exc.marked!r}: {reason} ({ctx.profile.name})")
            result.complete()
        return
    except Exception as exc:
        seen = ctx.endpoint.exchanges[mark:]
        if not kind.rollout_raised(ctx, path, result, seen, exc):
            _rollout_failed(ctx, path, result, exc, seen, log_mark)
        return
    finally:
        ctx.endpoint.set_script(env.name, None)
        exchanges = ctx.endpoint.exchanges[mark:]
        # However the rollout ended, its time is kept (a rollout that returned: the driver's own measure, below).
        # A bump derives a path's deadline from it when the path ran to its end (acceptance/limits.py): a FAIL
        # the rollout raised, or a fault path judged on Gym's report of the failure, as much as a returned one.
        result.timings[ROLLOUT_TIMING] = round(time.monotonic() - rollout_began, 3)
    result.timings.update({k.split("/")[-1]: round(v, 3) for k, v in rollout.timings.items()})
    processed = rollout.results[0]
    full = processed["full_result"]
    sent_row = batch["extra_env_info"][0]
    metrics = {k: v for k, v in rollout.rollout_metrics.items() if not k.startswith("timing/")}
    result.metrics = {k: checks.recordable(v) for k, v in metrics.items()}
    exchanges = kind.rollout_returned(path, result, exchanges, processed)
    if exchanges is None:
        return  # the kind judged the path on what came back, alone
    tables = full_result_tables(batch["extra_env_info"], rollout.results)
    judged_as = kind.judged_as(path)
    # The judge's sampling comes from the environment's own config (read only when a judge was asked).
    judged = any(e.kind == JUDGE for e in exchanges)
    judge = judge_params(ctx.gym_root / env.config) if judged else None
    top = gym_compat.sends_top_logprobs(ctx.gym.get("version"))
    # Each check is named for the failure kind it reports (runfolder/record.py Failure.kind).
    for name, check in (
        ("verifier", lambda: checks.check_verifier(result, path, full)),
        (
            "gym_failure",
            lambda: checks.check_gym_failure(
                result,
                full,
                judged_as.recorded and judged_as.recorded.fields,
                fidelity.verdict_markers(env.name),
                kind.verdict_of_original,
                ctx.profile,
            ),
        ),
        ("tokens", lambda: checks.check_tokens(result, script, exchanges, processed)),
        (
            "request_contract",
            lambda: checks.check_request_contract(
                result, path, script, exchanges, sent_row, full, ctx.config, judge, top, not kind.verdict_of_original
            ),
        ),
        ("metadata", lambda: checks.check_metadata(result, judged_as, fed, full)),
        ("metrics", lambda: checks.check_metrics(result, path, metrics, tables, full)),
        ("first_turn", lambda: checks.check_first_turn(result, fed, exchanges, processed, ctx.tokenizer)),
        ("routing", lambda: checks.check_routing(result, path, script, exchanges, processed.get("gym_agent_ref"))),
        ("tool_schema", lambda: checks.check_tool_schema(result, sent_row, exchanges, full)),
        ("tool_output", lambda: checks.check_tool_output(result, path, full)),
        ("rl_reward", lambda: checks.check_rl_reward(result, full, rollout.recipe[0] if rollout.recipe else None)),
        ("recording", lambda: checks.check_recording(result, path, full, exchanges)),
        ("continuity", lambda: checks.check_continuity(result, exchanges)),
        *kind.checks(path, result, prepared, processed),
    ):
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - Gym's result has a shape the check cannot read
            result.error(GYM, f"check {name} could not read Gym's result: {type(exc).__name__}: {exc}\n{_trace(exc)}")
            return
    result.complete()


def _oracle_run(ctx: RunContext) -> Callable[[PathSpec, RunFolder], PathRecord]:
    """How a kind runs another path once, in the same Gym, into a folder of its own (a variant's original)."""
    return lambda other, into: run_path(replace(ctx, attempts=1), other, into=into)


def _row_of(ctx: RunContext, path: PathSpec) -> str:
    """The path's row as its JSON line: carried with the path (a recording's), or the running Gym's pinned line,
    checked once per run (acceptance/setup.py); InputDrift when its bytes are not the ones pinned."""
    if path.row.data is not None:
        return json.dumps(path.row.data)
    checked = (ctx.inputs or {}).get(path.env.name)
    if checked is None:
        return read_pinned(path.row.file, path.row.line, path.row.sha256, path.env.name, ctx.gym_root)
    if "drift" in checked:
        raise InputDrift(path.env.name, path.row.file, checked["drift"]["expected"], checked["drift"]["actual"])
    return checked["raw"]


def _rollout_failed(
    ctx: RunContext,
    path: PathSpec,
    result: PathRecord,
    exc: BaseException,
    exchanges: list,
    log_mark: int = 0,
) -> None:
    """A rollout that produced no data: a contract FAIL when the endpoint refused a request (an RL override or
    sampling parameter did not reach the model), else an ERROR naming who is to blame."""
    refused = [e for e in exchanges if e.status != 200]
    contract = [e for e in refused if e.blame == CONTRACT]
    if contract and not isinstance(exc, (RolloutTimeout, GymDied)):
        for exchange in contract:
            result.fail(
                "request_contract",
                f"{exchange.kind or exchange.route} request",
                "accepted",
                exchange.violation.removeprefix("gymgate endpoint: "),
            )
        result.complete(blame=CONTRACT)
        result.reason += f" (the rollout then failed: {type(exc).__name__})"
        return
    if any(e.blame == HARNESS for e in refused):
        first = next(e for e in refused if e.blame == HARNESS)
        result.error(HARNESS, f"endpoint: {first.violation}; the rollout then failed: {type(exc).__name__}: {exc}")
        return
    if refused:
        exc = RolloutDataFailure(f"the endpoint refused Gym's request ({refused[0].violation}); then: {exc}")
    log = ctx.run.log(path.env.name)
    if isinstance(exc, (RolloutTimeout, GymDied)) and ctx.discard is not None:
        ctx.discard(path.env.name, f"{path.id}: {exc.category}")  # a hung or half-dead Gym serves no one
    if isinstance(exc, RolloutError):
        result.error(GYM, gymlog.with_log_cause(f"{exc.category}: {exc}"[:3000], log, log_mark))
    elif is_ray_failure(exc):
        result.error(HARNESS, f"rollout: {type(exc).__name__}: {exc}\n{_trace(exc)}")
    else:
        # The Gym actor died, or consuming Gym's result raised: Gym's doing (the same harness passed the baseline).
        reason = gymlog.with_log_cause(f"rollout: {type(exc).__name__}: {exc}"[:3000], log, log_mark)
        result.error(GYM, reason + "\n" + _trace(exc))
