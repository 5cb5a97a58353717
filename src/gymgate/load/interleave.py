"""A load comparison, in the harness: both refs' load workers up at once (each its own pin environment, Ray cluster,
endpoint and Gyms), then, environment by environment, each ref's paths alone, a warm-up, and the measured rounds of
the sweep with baseline and candidate measured at once (each its own worker, Gyms and endpoint), so whatever the
machine does meanwhile falls on both. Levels where a change is near its threshold get extra rounds (Pinpoint's way),
then the whole is judged (load/judge.py) and kept: load/load.json, load/report.md."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Any

from gymgate.atomic import write_json_atomic, write_text_atomic
from gymgate.compare.acks import LoadAck
from gymgate.endpoint.latency import LatencyModel
from gymgate.endpoint.latency import named as latency_model
from gymgate.kinds import kind_of
from gymgate.load import declared, protocol
from gymgate.load.child import LoadChild, WorkerGone, what_of
from gymgate.load.judge import LoadVerdict, acknowledge, judge, memory_metric, visible_growth
from gymgate.load.measures import BASELINE, CANDIDATE, SCHEMA, SIDES, Side, sides_of
from gymgate.load.report import curves_svg, load_html, load_markdown
from gymgate.load.saturation import judge_saturation
from gymgate.locations import repo_root
from gymgate.options import UP, child_argv
from gymgate.outcomes import EnvState
from gymgate.pathid import kind_named
from gymgate.runfolder import RunFolder, new_run_id
from gymgate.verdict import LoadCategory

RECORD, REPORT, PAGE = "load.json", "report.md", "report.html"
SOAK_ROUND = 1000  # a soak's first round number (measured, after any extra round a judgement may add)
CHECK_ROUND = -50  # the one batch that checks a slow environment under concurrency (never measured)
WARMUP_ROUND = -100  # round numbers below zero are not measured (and never collide with a measured round's tags)
SETTLE_S = 2.0  # idle time before the after-load reading (connections the load opened may close)
ANSWER_SLACK_S = 60.0  # beyond a command's own deadline, for the worker to answer
TYPICAL_TOKENS = 32  # a scripted answer's length, for a first guess of a rollout's model wait (the warm-up measures)


@dataclass
class LoadRun:
    folder: Path
    record: dict[str, Any]
    verdict: LoadVerdict


def loaded_plan(plan: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The planned paths whose kind is rolled out under load (pathkinds.toml `under_load`)."""
    return [p for p in plan if kind_named(kind_of(p["id"]).name).under_load]


def judged(record: dict[str, Any], acks: list[LoadAck] | None = None) -> LoadVerdict:
    """The record judged, and the reviewed `[[load]]` entries of its ref pair applied."""
    sides = {env: sides_of(record, env) for env in record["envs"]}
    thresholds = declared.thresholds()
    verdict = judge(sides, thresholds, record.get("ramp_rounds", 0))
    verdict.saturation, unjudged = judge_saturation(record)
    verdict.unjudged += unjudged
    return acknowledge(verdict, acks or [], thresholds)


def run_load(
    sources: dict[str, Any],
    prepared: dict[str, Any],
    envs: list[str],
    opts,
    out: Path,
    acks: list[LoadAck] | None = None,
) -> LoadRun:
    """`sources`, `prepared`: each side's Gym source and built environment (harness/run.prepare); `acks`: the
    reviewed `[[load]]` entries of this ref pair (compare/acks.py)."""
    return finish(out / "load", measure(sources, prepared, envs, opts, out), acks)


def new_record(
    sources: dict[str, Any], levels: tuple[int, ...], above: tuple[int, ...], latency: str = ""
) -> dict[str, Any]:
    """A load run's record before anything is measured: its declarations (the latency model by name, or the
    default), the levels this machine drives (`above`: those it cannot), both refs."""
    sweep = declared.sweep()
    return {
        "schema": SCHEMA,
        "declared": declared.digest(),
        "latency": latency_model(latency).to_json(),
        "probe_s": sweep.probe_s,
        "group": sweep.group,
        "levels": list(levels),
        "not_driven": list(above),
        "ramp_rounds": sweep.ramp_rounds,
        "refs": {side: {"source": sources[side].to_json()} for side in SIDES},
        "envs": {},
        "started": time.time(),
    }


def measure(sources: dict[str, Any], prepared: dict[str, Any], envs: list[str], opts, out: Path) -> dict[str, Any]:
    """Both refs' load workers up, each environment of `envs` measured in turn, then saturated; the record (kept in
    `out`/load/load.json as it grows), not yet judged. What a cluster's load unit runs on its node."""
    sweep = declared.sweep()
    levels, above = sweep.driven()
    folder = out / "load"
    folder.mkdir(parents=True, exist_ok=True)
    plan = loaded_plan(opts.plan)
    record = new_record(sources, levels, above, opts.load_latency)
    children: dict[str, LoadChild] = {}
    try:
        for side in SIDES:
            run = RunFolder(folder / side)
            run.root.mkdir(parents=True, exist_ok=True)
            run.write_source(sources[side].to_json())
            run.write_plan(plan)
            args = child_argv(UP, opts, run_dir=run.root)
            args += ["--ref-label", side, "--group", str(sweep.group), "--envs-per-gym", str(opts.share)]
            children[side] = LoadChild(prepared[side], args, new_run_id(), run.root / "worker.log", repo_root())
        print(f"load: starting both refs' Gyms ({', '.join(envs)}); levels {list(levels)}", flush=True)
        for side, child in children.items():
            record["refs"][side]["ready"] = _answer(child, sweep.start_s, "ready")
        live = {s: c for s, c in children.items() if "error" not in record["refs"][s]["ready"]}
        for env in envs:
            record["envs"][env] = _measure(env, live, record, sweep)
            write_json_atomic(folder / RECORD, record)
        _more_rounds(live, record, sweep)
        _saturate(live, record, envs)
    finally:
        for side, child in children.items():
            left = child.close(sweep.stop_s)
            record["refs"][side]["left_running"] = left
    record["finished"] = time.time()
    write_json_atomic(folder / RECORD, record)
    return record


def finish(folder: Path, record: dict[str, Any], acks: list[LoadAck] | None = None) -> LoadRun:
    """The record judged here (this checkout's thresholds, this pair's acknowledgements), and kept with its
    reports in `folder`: load.json, report.md, report.html, a curve per environment."""
    verdict = judged(record, acks)
    record["verdict"] = verdict.to_json()
    write_json_atomic(folder / RECORD, record)
    write_text_atomic(folder / REPORT, load_markdown(record, verdict))
    write_text_atomic(folder / PAGE, load_html(record, verdict))
    for env in record["envs"]:
        svg = curves_svg(env, sides_of(record, env))
        if svg:
            write_text_atomic(folder / f"{env}.svg", svg)
    return LoadRun(folder, record, verdict)


def _answer(child: LoadChild, timeout_s: float, what: str) -> dict[str, Any]:
    try:
        return child.answer(timeout_s, what)
    except WorkerGone as exc:
        return {"error": str(exc)}


def _measure(env: str, live: dict[str, LoadChild], record: dict[str, Any], sweep) -> dict[str, Any]:
    entry: dict[str, dict[str, Any]] = {side: {"rounds": []} for side in SIDES}
    for side in SIDES:
        ready = record["refs"][side].get("ready", {})
        status = ready.get("statuses", {}).get(env, {})
        if side not in live:
            entry[side]["error"] = f"the ref's load worker did not start: {ready.get('error', 'not started')}"
        elif status.get("status") == EnvState.SKIPPED:  # not in this Gym: nothing of it to load (load/judge.py)
            entry[side]["absent"] = entry[side]["error"] = status.get("reason") or f"{env} is not in this Gym"
        elif not ready.get("paths", {}).get(env):
            entry[side]["error"] = f"no path of {env} can be loaded on this ref: {ready.get('unloadable', {})}"
    going = [s for s in SIDES if not entry[s].get("error")]
    deadline = sweep.round_deadline(1)
    began = time.monotonic()
    phases: dict[str, float] = {}  # each phase's end: the record says where an environment's time went
    for side in going:
        count = protocol.ALONE_RUNS * len(record["refs"][side]["ready"]["paths"][env])
        alone = _ask(live[side], entry[side], deadline * count, protocol.ALONE, env=env, deadline_s=deadline)
        entry[side]["alone"] = alone
        if alone is not None and not alone.get("paths"):
            why = "; ".join(f"{p}: {w.splitlines()[0]}" for p, w in alone.get("failed_alone", {}).items())
            entry[side]["error"] = f"no path of {env} ran to its end alone on this ref ({why[:300]})"
    going = [s for s in going if not entry[s].get("error")]
    # What a rollout of this environment costs here, alone (the slower side's median): the levels worth warming up.
    phases["alone"] = time.monotonic()
    alone = [median(entry[s]["alone"]["seconds"]) for s in going if entry[s]["alone"].get("seconds")]
    alone_s = max(alone, default=0.0)
    wait_s = LatencyModel(**record["latency"]).mean_call_s(TYPICAL_TOKENS)
    cpus = [entry[s]["alone"]["cpu_s"] for s in going if entry[s]["alone"].get("cpu_s") is not None]
    cpu_s = max(cpus) if len(cpus) == len(going) and cpus else None  # the Gym's CPU of a rollout alone, when read
    # rounds run on both refs at once: each has its share of the cores
    candidates, not_driven = sweep.levels_for(alone_s, wait_s=wait_s, sides=len(going), cpu_s=cpu_s)
    share = sweep.share(len(going))
    estimates = {level: sweep.batch_s(level, alone_s, share, wait_s, cpu_s) for level in sweep.levels}
    drive = _drive(record)
    walls = _warm_up(env, live, entry, going, candidates, sweep, drive, estimates)
    levels, waves, slow = sweep.calibrated(walls)
    not_driven.update(slow)
    for level in candidates:
        if level not in walls:
            not_driven[level] = "a batch at a lower level already outgrew round_budget_s here"
    entry["plan"] = {
        "alone_s": round(alone_s, 4),
        "alone_cpu_s": cpu_s,
        "warm_batch_s": {str(k): round(v, 3) for k, v in walls.items()},
        "levels": list(levels),
        "waves": {str(x): waves[x] for x in levels},
        "not_driven": {str(k): v for k, v in sorted(not_driven.items())},
    }
    for side in going:
        entry[side]["warm"] = (_ask(live[side], entry[side], 0, protocol.USAGE, env=env) or {}).get("usage", {})
    phases["warm-up"] = time.monotonic()
    for level in levels:  # level by level: a side that fails a round (and stops) has the levels below measured
        for r in range(sweep.rounds):
            _round(live, entry, env, level, r, sweep, drive, walls[level])
        print(f"load {env}: {sweep.rounds} rounds at {level} in flight ({time.monotonic() - began:.0f} s)", flush=True)
    phases["rounds"] = time.monotonic()
    _soak(live, entry, env, sweep, drive, record.get("ramp_rounds", 0))
    phases["soak"] = time.monotonic()
    print(f"load {env}: " + "; ".join(_progress(side, entry[side]) for side in SIDES), flush=True)
    settled = _ask_both(live, entry, going, SETTLE_S, protocol.USAGE, env=env, settle_s=SETTLE_S)
    for side, answer in settled.items():
        entry[side]["settled"] = (answer or {}).get("usage", {})
    check = sweep.check_level(levels)
    if check is not None:  # after the readings: correctness under concurrency, not its cost
        entry["plan"]["check_level"] = check
        _check(live, entry, going, env, check, sweep, drive, estimates[check])
    _confirm(live, entry, going, env, sweep)  # after the readings: these runs alone are not the load's cost
    phases["check and confirm"] = time.monotonic()
    starts = [began, *list(phases.values())[:-1]]
    entry["seconds"] = {name: round(end - start, 2) for (name, end), start in zip(phases.items(), starts, strict=True)}
    return entry


def _soak(live, entry, env: str, sweep, drive: dict[str, Any], ramp_rounds: int) -> None:
    """More rounds, both refs at once, at the level whose rounds did the most rollouts a second, until their memory
    readings could see a leak of the sweep's target (judge.visible_growth) or the soak's budget is spent: a small
    leak shows only over many rollouts, and the noise of each Gym's allocator decides how many. A soak the readings
    so far say could not reach the target within the budget is not run (`why` gives the rollouts it would take).
    `plan.soak` says what it ran and what the run can see."""
    if any(entry[s].get("error") or entry[s].get("stopped") for s in SIDES):
        return
    sides = {s: Side.from_json(entry[s]) for s in SIDES}
    curve = sides[BASELINE].throughput_curve()
    level = sweep.soak_level(curve)
    if level is None:
        return
    thresholds = declared.thresholds()
    expected = entry["plan"]["warm_batch_s"][str(level)]
    began, ran, why = time.monotonic(), 0, ""
    while True:
        metric = memory_metric(sides[BASELINE], sides[CANDIDATE], ramp_rounds)
        sees, more = visible_growth(
            metric, sides[BASELINE], sides[CANDIDATE], thresholds, ramp_rounds, sweep.soak_target_kb
        )
        spent = time.monotonic() - began
        if not more:
            break
        if more / curve[level] > sweep.soak_budget_s - spent:
            why = f"{more:.0f} more rollouts (~{more / curve[level]:.0f} s here) to see {sweep.soak_target_kb:g} KiB"
            break
        _round(live, entry, env, level, SOAK_ROUND + ran, sweep, drive, expected)
        ran += 1
        if any(entry[s].get("error") or entry[s].get("stopped") for s in SIDES):
            break
        sides = {s: Side.from_json(entry[s]) for s in SIDES}
    soak = {"level": level, "rounds": ran, "seconds": round(spent, 2), "sees_kb": round(sees, 1), "metric": metric}
    entry["plan"]["soak"] = {**soak, "why": why} if why else soak
    told = f"sees a leak from {sees:.3g} KiB/rollout" + (f"; the soak stops: {why}" if why else "")
    print(f"load {env}: soaked {ran} rounds at {level} in flight ({spent:.0f} s): {told}", flush=True)


def _check(
    live, entry, sides: list[str], env: str, level: int, sweep, drive: dict[str, Any], expected_s: float
) -> None:
    """One batch at `level` in flight, when no measured level had two rollouts at once: a slow environment is still
    held to its paths alone under concurrency (a session store that collides shows only there)."""
    going = [s for s in sides if not entry[s].get("error") and not entry[s].get("stopped")]
    answers = _ask_rounds(live, entry, going, env, level, CHECK_ROUND, 1, sweep, drive, expected_s)
    for side, answer in answers.items():
        if "rollouts" not in answer:
            entry[side]["error"] = f"gymgate's load worker failed the check at {level} in flight: {answer.get('error')}"
        else:
            entry[side]["check"] = {k: v for k, v in answer.items() if k != "op"}


def _confirm(live, entry, going: list[str], env: str, sweep) -> None:
    """On each side at once, the paths whose loaded rollouts differed from them alone, run alone again
    (driver.confirm): a leaf a path varies alone too is not held against the load — it leaves the round's
    mismatches, and `alone_again` says so. A confirmation that fails or goes unanswered leaves the environment
    unjudged on that side (never a pass)."""
    deadline = sweep.round_deadline(1)
    commands, takes = {}, 0.0
    for side in going:
        wanted = _differing(entry[side])
        if wanted:
            fields = {pid: sorted(names) for pid, names in wanted.items()}
            commands[side] = {"env": env, "fields": fields, "runs": sweep.confirm_runs, "deadline_s": deadline}
            takes = max(takes, deadline * sweep.confirm_runs * len(wanted))
    answers = {side: a for side, a in _ask_each(live, entry, commands, takes, protocol.CONFIRM).items() if a}
    # A leaf a path varies alone on either ref is that path's own nondeterminism on both (the same row and script:
    # that the other ref did not show it in its runs alone is chance), never held against the load on either.
    varying: dict[str, set[str]] = {}
    for answer in answers.values():
        for pid, found in answer["paths"].items():
            varying.setdefault(pid, set()).update(found["varying"])
    for side in going:
        if side in answers or side not in commands:
            _mask_alone_again(entry[side], answers.get(side, {}).get("paths", {}), varying)


def _differing(side: dict[str, Any]) -> dict[str, set[str]]:
    """Each path whose loaded rollouts differed from it alone (rounds and the check), and the leaves that did."""
    wanted: dict[str, set[str]] = {}
    for r in [*side["rounds"], *([side["check"]] if side.get("check") else [])]:
        for m in r.get("mismatches", []):
            fields = set(m["fields"]) - {protocol.PROBE_FIELD}  # a session probe's read is never the path's own
            if fields:
                wanted.setdefault(m["path"], set()).update(fields)
    return wanted


def _mask_alone_again(side: dict[str, Any], again: dict[str, Any], varying: dict[str, set[str]]) -> None:
    """The leaves each path varied alone (`varying`, on either ref) leave this side's mismatches; `alone_again`
    keeps what this side ran."""
    if again:
        side["alone_again"] = again
    for r in [*side["rounds"], *([side["check"]] if side.get("check") else [])]:
        kept = []
        for m in r.get("mismatches", []):
            left = sorted(set(m["fields"]) - varying.get(m["path"], set()))
            if left:
                shown = [d for d in m["differences"] if d["field"] in left]
                kept.append(
                    {**m, "fields": left, "differences": shown or [{"field": left[0], "alone": "…", "loaded": "…"}]}
                )
        r["mismatches"], r["mismatched"] = kept, len(kept)


def _warm_up(
    env: str,
    live,
    entry,
    going: list[str],
    candidates: tuple[int, ...],
    sweep,
    drive: dict[str, Any],
    estimates: dict[int, float],
) -> dict[int, float]:
    """`sweep.warmup` passes of one batch at each level in turn, both sides at once, up to the first level whose
    batch outgrows the round budget; the last pass's batch times, by level. The baseline's times decide (the slower
    side's when it has none): what this machine carries is the baseline's measure, and a candidate that is slower at
    a level is the finding there, never a reason to leave the level out."""
    walls: dict[int, float] = {}
    for n in range(sweep.warmup):
        walls = {}
        for i, level in enumerate(candidates):
            round_no = WARMUP_ROUND - n * len(candidates) - i
            answers = _ask_rounds(live, entry, going, env, level, round_no, 1, sweep, drive, estimates[level])
            timed = {side: a["wall_s"] for side, a in answers.items() if "wall_s" in a}
            walls[level] = timed.get(BASELINE, max(timed.values(), default=0.0))
            if walls[level] > sweep.round_budget_s:
                break
    return walls


def _round(
    live, entry, env: str, level: int, round_no: int, sweep, drive: dict[str, Any], expected_s: float | None
) -> None:
    """One measured round on both sides at once (each side's worker its own Gyms, endpoint and cores' share: the
    same moments of the machine fall on both), but a side that already stopped on this environment (a failed round:
    what follows it would measure a Gym in an unknown state)."""
    going = [s for s in SIDES if s in live and not entry[s].get("error") and not entry[s].get("stopped")]
    waves = entry["plan"]["waves"][str(level)]
    answers = _ask_rounds(live, entry, going, env, level, round_no, waves, sweep, drive, expected_s)
    for side, answer in answers.items():
        if "rollouts" not in answer:  # gymgate's own worker raised (the driver answers Gym's failures in the round)
            entry[side]["error"] = f"gymgate's load worker failed a round at {level} in flight: {answer.get('error')}"
            continue
        entry[side]["rounds"].append({k: v for k, v in answer.items() if k != "op"})
        if answer.get("error"):
            entry[side]["stopped"] = f"after a failed round at {level} in flight"


def _ask_rounds(
    live, entry, sides: list[str], env: str, level: int, round_no: int, waves: int, sweep, drive, expected_s=None
) -> dict[str, dict[str, Any]]:
    """One round on each of `sides` at once: `waves` batches of `level` rollouts, each under the sweep's deadline for
    a batch expected to take `expected_s`, the model answering after the run's latency model and the servers' loops
    probed (`drive`). Each side's answer; a side whose worker is gone or silent has its error set instead."""
    deadline = sweep.round_deadline(level, expected_s)
    command = {"env": env, "level": level, "round": round_no, "waves": waves, "deadline_s": deadline, **drive}
    answers = _ask_both(live, entry, sides, deadline * waves, protocol.ROUND, **command)
    return {side: answer for side, answer in answers.items() if answer is not None}


def _ask_both(live, entry, sides: list[str], takes_s: float, op: str, **command: Any) -> dict[str, Any]:
    """The same command to each side's worker at once, then each answer as `_ask` takes it (None where it failed)."""
    return _ask_each(live, entry, {side: command for side in sides}, takes_s, op)


def _ask_each(live, entry, commands: dict[str, dict[str, Any]], takes_s: float, op: str) -> dict[str, Any]:
    """Each side's own command to its worker, all sent before any answer is awaited (the workers run them at once),
    then each answer as `_ask` takes it (None where it failed)."""
    sent = []
    for side, command in commands.items():
        try:
            live[side].send({"op": op, **command})
            sent.append(side)
        except WorkerGone as exc:
            entry[side]["error"] = str(exc)
    return {side: _answer_of(live[side], entry[side], takes_s, op, commands[side]) for side in sent}


def _ask(child: LoadChild, entry: dict[str, Any], takes_s: float, op: str, **command: Any) -> dict[str, Any] | None:
    """A command's answer, awaited for what the command may take (`takes_s`) and ANSWER_SLACK_S more; or None with
    the side's error set (the worker is gone, silent, or the command raised)."""
    try:
        child.send({"op": op, **command})
    except WorkerGone as exc:
        entry["error"] = str(exc)
        return None
    return _answer_of(child, entry, takes_s, op, command)


def _answer_of(child: LoadChild, entry: dict[str, Any], takes_s: float, op: str, command: dict) -> dict | None:
    try:
        answer = child.answer(takes_s + ANSWER_SLACK_S, what_of({"op": op, **command}))
    except WorkerGone as exc:
        entry["error"] = str(exc)
        return None
    if answer.get("error") and op != protocol.ROUND:
        entry["error"] = f"{op}: {answer['error']}"
        return None
    return answer


def _drive(record: dict[str, Any]) -> dict[str, Any]:
    """What every round of this run asks its worker besides the round itself: the latency model, the probe period."""
    return {"latency": record["latency"], "probe_s": record["probe_s"]}


def _progress(side: str, entry: dict[str, Any]) -> str:
    if entry.get("error"):
        return f"{side}: {entry['error'].splitlines()[0]}"
    rounds = entry["rounds"]
    done = sum(r.get("completed", 0) for r in rounds)
    return f"{side}: {len(rounds)} rounds, {done} rollouts"


def _saturate(live: dict[str, LoadChild], record: dict[str, Any], envs: list[str]) -> None:
    """Last (it may leave a Gym worse for wear): each way of saturating the policy server (sweep.toml), on each side in
    turn, every environment both sides loaded at once."""
    given = declared.saturated()
    record["saturated"] = {"level": given.level, "max_attempts": given.max_attempts, "recover_s": given.recover_s}
    loaded = [e for e in envs if all(not record["envs"][e].get(s, {}).get("error") for s in SIDES)]
    if not loaded or len(live) < len(SIDES):
        return
    record["saturation"] = {}
    for kind in given.kinds:
        spec = {k: v for k, v in asdict(kind).items() if v not in (None, "")}
        entries: dict[str, dict[str, Any]] = {side: {} for side in SIDES}
        takes = kind.window_s + given.recover_s
        command = {"envs": loaded, "level": given.level, "saturation": spec, "deadline_s": given.recover_s}
        answers = _ask_both(live, entries, list(SIDES), takes, protocol.SATURATED, **command)  # both at once
        for side in SIDES:
            result = answers.get(side) or {"error": entries[side].get("error", "no answer")}
            record["saturation"].setdefault(kind.name, {})[side] = result
        print(f"load: policy server saturated ({kind.name}) on both refs", flush=True)


def _more_rounds(live: dict[str, LoadChild], record: dict[str, Any], sweep) -> None:
    """Where a per-level change is suspicious, up to `extra_rounds` more interleaved rounds at that level, until it
    is significant either way (Chromium Pinpoint repeats a comparison the same way)."""
    for extra in range(sweep.extra_rounds):
        verdict = judged(record)
        near = sorted({(m.env, m.level) for m in verdict.metrics if m.category == LoadCategory.SUSPICIOUS and m.level})
        if not near:
            return
        for env, level in near:
            walls = record["envs"][env]["plan"]["warm_batch_s"]
            _round(
                live, record["envs"][env], env, level, sweep.rounds + extra, sweep, _drive(record), walls[str(level)]
            )
        print(f"load: extra round {extra + 1} where a change is near its threshold: {near}", flush=True)
