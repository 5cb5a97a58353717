"""Running one path: Gym row -> dataset -> processor/collate -> Gym services -> rollout -> postprocess,
then every check, into one PathResult. Infrastructure trouble is an ERROR, never a reward-0 pass or fail."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate.acceptance import checks
from gymgate.acceptance.record import ERROR, FAIL, SKIP, PathResult
from gymgate.cases import InputDrift, load_case, read_row, transform_row
from gymgate.catalog import Environment
from gymgate.consumer.dataset import load_rows
from gymgate.consumer.errors import NonContiguousError, RolloutError, RowIndexError
from gymgate.consumer.processor import collate, process_datum
from gymgate.consumer.rollout import GenerationConfig, run_rollout_sync
from gymgate.model.endpoint import ModelEndpoint
from gymgate.model.script import Script

# The RL generation overrides: distinctive values, so a parameter that fails to reach the model shows.
GENERATION = GenerationConfig(max_new_tokens=4096, temperature=0.7, top_p=0.95)


@dataclass
class RunContext:
    endpoint: ModelEndpoint
    tokenizer: Any
    gym_root: Path
    run_dir: Path
    gym: dict[str, Any]
    handles: dict[str, Any] = field(default_factory=dict)
    statuses: dict[str, Any] = field(default_factory=dict)
    config: GenerationConfig = GENERATION
    inputs: dict[str, Any] | None = None  # example rows checked once per run (acceptance.setup)
    ensure: Callable[[str], None] | None = None  # waits for (or starts) this environment's Gym


def run_path(
    ctx: RunContext, env: Environment, mode: str, script: Script | None = None, records: Path | None = None
) -> PathResult:
    """`script` replaces the case's own behaviour for `mode` (negative tests swap answers with it);
    `records` is where the result record goes (default: the run's paths/)."""
    result = PathResult(path=f"{env.name}:{mode}", env=env.name, mode=mode, gym=ctx.gym)
    began = time.monotonic()
    try:
        if ctx.ensure is not None:
            ctx.ensure(env.name)  # the Gym's start-up is not the path's time
        result.timings["gym_wait_s"] = round(time.monotonic() - began, 3)
        began = time.monotonic()
        _run(ctx, env, mode, result, script)
    finally:
        result.timings["path_s"] = round(time.monotonic() - began, 3)
        result.timings["finished_at"] = round(time.time(), 3)
        result.finish()
        result.write(records or ctx.run_dir / "paths")
    return result


def _run(ctx: RunContext, env: Environment, mode: str, result: PathResult, script: Script | None) -> None:
    status = ctx.statuses.get(env.name)
    if status is None or status.status == "skipped":
        result.outcome, result.reason = SKIP, status.reason if status else "environment not started"
        return
    if status.status != "ready":
        result.outcome, result.reason = ERROR, f"startup: {status.reason}"
        return
    case = load_case(env)
    result.row = {"file": case.file, "line": case.line, "sha256": case.sha256, "transforms": list(case.transforms)}
    checked = (ctx.inputs or {}).get(env.name)
    try:
        if checked is None:
            raw = read_row(case, ctx.gym_root)
        elif "drift" in checked:
            raise InputDrift(env.name, case.file, checked["drift"]["expected"], checked["drift"]["actual"])
        else:
            raw = checked["raw"]
    except InputDrift as drift:
        result.outcome, result.reason = FAIL, f"input drift: {drift}"
        result.fail("input_drift", case.file, drift.expected, drift.actual)
        return
    data_file = ctx.run_dir / "data" / env.name / f"{mode}.jsonl"
    data_file.parent.mkdir(parents=True, exist_ok=True)
    data_file.write_text(json.dumps(transform_row(case, raw)) + "\n")
    batch = collate([process_datum(row, i) for i, row in enumerate(load_rows(data_file))])

    script = script or case.script(mode)
    mark = len(ctx.endpoint.exchanges)
    ctx.endpoint.set_script(env.name, script)
    try:
        rollout = run_rollout_sync(ctx.handles[env.name].actor, batch, ctx.tokenizer, ctx.config)
    except NonContiguousError as exc:
        result.fail("continuity", f"turn {exc.turn}, position {exc.position}", "contiguous", str(exc)[:600])
        return
    except RowIndexError as exc:
        result.fail("row_count", "rollouts returned", 1, str(exc))
        return
    except RolloutError as exc:
        result.outcome, result.reason = ERROR, f"{exc.category}: {_endpoint_hint(ctx, mark)}{exc}"[:3000]
        return
    except Exception as exc:  # noqa: BLE001 - anything else is infrastructure, with its trace kept
        result.outcome = ERROR
        result.reason = f"infrastructure: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
        return
    finally:
        ctx.endpoint.set_script(env.name, None)
        exchanges = ctx.endpoint.exchanges[mark:]
    result.timings.update({k.split("/")[-1]: round(v, 3) for k, v in rollout.timings.items()})
    processed = rollout.results[0]
    full = processed["full_result"]
    sent_row = batch["extra_env_info"][0]
    result.metrics = {k: v for k, v in rollout.rollout_metrics.items() if not k.startswith("timing/")}
    checks.check_verifier(result, case, full)
    checks.check_tokens(result, script, exchanges, processed)
    checks.check_requests(result, case, script, exchanges, sent_row, full, ctx.config)
    checks.check_routing(result, case, script, exchanges, sent_row)
    checks.check_tools(result, sent_row, exchanges, full)
    checks.check_history_echo(result, exchanges)


def _endpoint_hint(ctx: RunContext, mark: int) -> str:
    rejected = [e.violation for e in ctx.endpoint.exchanges[mark:] if e.status != 200]
    return f"endpoint rejected a request ({rejected[0]}); " if rejected else ""
