"""One ref's load rounds, inside its pin's environment, against its running Gyms: each environment's paths alone
first (twice: the oracle, and the path's own nondeterminism), then rounds of `level` rollouts in flight through the
RL consumer (dataset row -> processor/collate -> GRPO repeat -> the Gym actor -> postprocess), every rollout routed
to its own script at the endpoint, held to its path alone, and the round's cost read from the kernel."""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gymgate.cases.case import InputDrift, apply_transforms, read_pinned
from gymgate.consumer.dataset import task_name_for
from gymgate.consumer.processor import collate, process_datum, repeat_interleave
from gymgate.consumer.rollout import run_rollout_sync
from gymgate.endpoint import ROLLOUT_TAG
from gymgate.endpoint.faults import Saturation
from gymgate.endpoint.latency import LatencyModel
from gymgate.endpoint.script import Script
from gymgate.endpoint.server import UNTAGGED, ModelEndpoint, request_key
from gymgate.load import observe, procstat, shape
from gymgate.load.loopprobe import LoopProbe
from gymgate.load.protocol import ALONE_RUNS, PROBE_FIELD
from gymgate.paths.spec import PathSpec
from gymgate.runner.path import GENERATION
from gymgate.services.launcher import heapprobe
from gymgate.text import strip_ansi
from gymgate.variants.sessions import read_your_writes


@dataclass
class LoadPath:
    """A path as a load run replays it: its dataset row (the raw line, as RL's dataset holds it) and its script."""

    id: str
    env: str
    agent: str
    datum: dict[str, str]
    script: Script
    alone: dict[str, Any] = field(default_factory=dict)  # its observation alone (the oracle)
    # Its untagged requests alone (a judge's, a /tokenize), by kind, in order (endpoint.request_key; its own tag the
    # observation's placeholder): the endpoint routes a loaded rollout's by them.
    untagged: dict[str, list[str]] = field(default_factory=dict)
    masked: set[str] = field(default_factory=set)  # leaves that differ between its runs alone
    # A session probe's (variants/sessions.read_your_writes): the id of its read call, and what that read must answer
    # on every rollout (the case's declared output, else its first run alone: a fresh session's) — never masked
    probe_call: str = ""
    probe_expected: str | None = None


@dataclass
class Rolled:
    """What came back of one batch: each tag's observation leaves and arrival time, or the batch's error; and each
    tag's policy attempts at the endpoint (`attempts`: the longest run of failed attempts of one call, plus the one
    answered; `unanswered`: a call whose every attempt failed)."""

    leaves: dict[str, dict[str, Any]] = field(default_factory=dict)
    arrivals: dict[str, float] = field(default_factory=dict)
    error: str = ""
    attempts: dict[str, int] = field(default_factory=dict)
    unanswered: set[str] = field(default_factory=set)
    injected: int = 0  # attempts the endpoint failed in all
    waited_s: float = 0.0  # model latency the endpoint's answers waited, in all (the latency model's)
    probes: dict[str, str | None] = field(default_factory=dict)  # a session probe's read answer, by its rollout's tag
    untagged: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # each tag's, as LoadPath.untagged


SHOWN = 5  # differing leaves shown side by side per mismatching rollout (every one is named)
PROBE = "+read_your_writes"  # a path's id with the case's session probe in its script (variants/sessions.py)
CONFIRM_ROUND = -20  # the tags of a path's runs alone again (below the alone runs', above the warm-up's)


class LoadDriver:
    def __init__(
        self,
        ref: str,
        endpoint: ModelEndpoint,
        statuses: dict[str, Any],
        handles: dict[str, Any],
        tokenizer: Any,
        gym_root,
        group: int,
        watch: Callable[[str], str] | None = None,
    ):
        self.ref, self.endpoint, self.statuses, self.handles = ref, endpoint, statuses, handles
        self.tokenizer, self.gym_root, self.group, self.watch = tokenizer, gym_root, group, watch
        self.paths: dict[str, list[LoadPath]] = {}
        self.unloadable: dict[str, str] = {}  # path id -> why it is not loaded

    # ----- what is loaded ----------------------------------------------------------------------------------------
    def admit(self, specs: list[PathSpec]) -> None:
        """The paths of the plan this ref can load: its environment is up, its row is the one pinned."""
        for spec in specs:
            status = self.statuses.get(spec.env.name)
            if status is None or str(status.status) != "ready":
                self.unloadable[spec.id] = f"its Gym is not up ({status.reason if status else 'never started'})"
                continue
            if spec.cannot_run:
                self.unloadable[spec.id] = spec.cannot_run
                continue
            try:
                raw = (
                    json.dumps(spec.row.data)
                    if spec.row.data is not None
                    else read_pinned(spec.row.file, spec.row.line, spec.row.sha256, spec.env.name, self.gym_root)
                )
            except InputDrift as drift:
                self.unloadable[spec.id] = f"input drift: {drift}"
                continue
            fed = apply_transforms(json.loads(raw), spec.row.transforms, spec.env)
            datum = {
                "extra_env_info": json.dumps(fed) + "\n",
                "task_name": task_name_for(spec.row.file or spec.env.name),
            }
            agent = str((fed.get("agent_ref") or {}).get("name", ""))
            loaded = self.paths.setdefault(spec.env.name, [])
            loaded.append(LoadPath(spec.id, spec.env.name, agent, datum, spec.script))
            probe = read_your_writes(spec.script, spec.env.session)
            if probe is not None and not any(p.id.endswith(PROBE) for p in loaded):  # one an environment
                declared = spec.env.session.read_your_writes
                read_turn = next(i for i, t in enumerate(probe.turns) if t.tool_calls[:1] == (declared.read,))
                path = LoadPath(spec.id + PROBE, spec.env.name, agent, datum, probe, probe_call=f"call_{read_turn}_0")
                path.probe_expected = declared.output
                loaded.append(path)

    def roots(self, env: str) -> list[int]:
        """The processes of the environment's Gym instance that are Gym's servers: its actor's process group, but the
        actor (which also runs gymgate's consumer and the head server)."""
        head = [int(s["pid"]) for s in self.statuses[env].servers if s.get("type") == "head" and s.get("pid")]
        if not head:
            raise RuntimeError(f"{env}: its Gym instance names no head server process to find its servers by")
        return procstat.group(head[0])

    # ----- alone ---------------------------------------------------------------------------------------------------
    def alone(self, env: str, deadline_s: float) -> dict[str, Any]:
        """Each path alone, ALONE_RUNS times: its oracle, and its own nondeterminism. A path that fails alone is not
        loaded (the acceptance paths judge it); said in the answer."""
        kept, failed, seconds = [], {}, []
        probes: dict[str, dict[str, Any]] = {}  # each session probe's read, alone (a reviewer declares it from here)
        roots = self.roots(env)
        before = procstat.usage(roots).cpu_s
        for path in self.paths.get(env, []):
            runs = []
            for n in range(ALONE_RUNS):
                rolled = self.roll(env, [(shape.tag(self.ref, env, 1, -1 - n, 0, 0), path)], deadline_s)
                if rolled.error:
                    failed[path.id] = rolled.error
                    break
                runs.append(next(iter(rolled.leaves.values())))
                path.untagged = path.untagged or next(iter(rolled.untagged.values()), {})
                seconds += rolled.arrivals.values()
                if path.probe_call:
                    read = next(iter(rolled.probes.values()), None)
                    probes.setdefault(path.id, {"declared": path.probe_expected, "alone": []})["alone"].append(read)
                    if path.probe_expected is None:  # undeclared: a fresh session's answer, its first run alone
                        path.probe_expected = read
            if path.id in failed:
                continue
            path.alone, path.masked = runs[0], set().union(*(observe.differing(runs[0], r) for r in runs[1:]))
            kept.append(path)
        self.paths[env] = kept
        self.unloadable.update({p: f"alone it did not run to its end: {why}" for p, why in failed.items()})
        return {
            "paths": [p.id for p in kept],
            "masked": {p.id: sorted(p.masked) for p in kept if p.masked},
            "failed_alone": failed,
            "probes": probes,
            "seconds": sorted(round(x, 4) for x in seconds),  # each rollout alone: what a level here would cost
            # the Gym servers' CPU a rollout alone cost (the kernel's accounting): what a batch of many costs the cores
            "cpu_s": round((procstat.usage(roots).cpu_s - before) / len(seconds), 4) if seconds else None,
        }

    def confirm(self, env: str, fields: dict[str, list[str]], runs: int, deadline_s: float) -> dict[str, Any]:
        """Each path whose loaded rollouts differed from it alone (`fields`: path id -> the leaves that differed) run
        alone again, up to `runs` times, until it has shown each of those leaves varying by itself: what a path does
        alone too is its own nondeterminism, not concurrency's, and is masked from now on. Per path: the runs made,
        and every leaf found varying."""
        paths = {p.id: p for p in self.paths.get(env, [])}
        out: dict[str, Any] = {}
        for pid, wanted in fields.items():
            path = paths.get(pid)
            if path is None:
                continue
            found: set[str] = set()
            made, error = 0, ""
            while made < runs and not set(wanted) <= path.masked:
                tag = shape.tag(self.ref, env, 1, CONFIRM_ROUND - made, 0, 0)
                rolled = self.roll(env, [(tag, path)], deadline_s)
                made += 1
                if rolled.error or tag not in rolled.leaves:
                    error = rolled.error or "no result"
                    break
                varying = observe.differing(path.alone, rolled.leaves[tag]) - path.masked
                path.masked |= varying
                found |= varying
            out[pid] = {"runs": made, "varying": sorted(found), "error": error}
        return {"paths": out}

    # ----- a round -------------------------------------------------------------------------------------------------
    def servers(self, env: str) -> dict[str, tuple[str, int]]:
        """The environment's Gym servers (its instance's, by their names in Gym's config) and where they listen."""
        return {
            str(s["name"]): (str(s.get("host") or "127.0.0.1"), int(s["port"]))
            for s in self.statuses[env].servers
            if s.get("type") != "head" and s.get("port")
        }

    def round(
        self,
        env: str,
        level: int,
        round_no: int,
        waves: int,
        deadline_s: float,
        latency: dict[str, Any] | None = None,
        probe_s: float = 0.0,
    ) -> dict[str, Any]:
        """`waves` consecutive batches of `level` rollouts in flight at once (GRPO groups, shape.round_paths), each
        rollout held to its path alone, the model answering after `latency` (endpoint/latency.py); the round's cost
        from the kernel's accounting of the Gym's servers and the endpoint's own thread, and each server's event-loop
        lag probed every `probe_s` (load/loopprobe.py; 0: not probed). A batch that fails ends the round (what
        follows would measure a Gym in an unknown state)."""
        paths = {p.id: p for p in self.paths.get(env, [])}
        roots = self.roots(env)
        model = LatencyModel(**latency) if latency else None
        probe = LoopProbe(self.servers(env) if probe_s > 0 else {}, probe_s or 1.0)
        before, endpoint_before = procstat.usage(roots), self.endpoint.cpu_seconds()
        began = time.monotonic()
        latencies: list[float] = []
        mismatches: list[dict[str, Any]] = []
        rollouts = completed = 0
        waited = 0.0
        error = ""
        with probe:
            for wave in range(waves):
                batch, rolled, differ = self._wave(env, paths, level, round_no, waves, wave, deadline_s, model)
                rollouts += len(batch)
                completed += len(rolled.leaves)
                latencies += rolled.arrivals.values()
                waited += rolled.waited_s
                mismatches += differ
                if rolled.error:
                    error = rolled.error
                    break
        wall = time.monotonic() - began
        after, endpoint_after = procstat.usage(roots), self.endpoint.cpu_seconds()
        # after the CPU reading (its collections are not the round's cost); a warm-up or check batch is not fitted
        heap = self.heap(roots) if round_no >= 0 else {}
        return {
            "env": env,
            "level": level,
            "round": round_no,
            "waves": waves,
            "rollouts": rollouts,
            "completed": completed,
            "error": error,
            "wall_s": round(wall, 4),
            "latencies_s": sorted(round(v, 4) for v in latencies),
            "gym_cpu_s": round(after.cpu_s - before.cpu_s, 4),
            "endpoint_cpu_s": round(endpoint_after - endpoint_before, 4),
            "model_wait_s": round(waited, 4),
            "loop_lag": probe.lags() if probe_s > 0 else {},
            "after": {**after.to_json(), **heap},
            "mismatches": mismatches,
            "mismatched": len(mismatches),
        }

    @staticmethod
    def heap(roots: list[int]) -> dict[str, Any]:
        """What the servers' heaps hold after a collection (services/launcher/heapprobe.py): `heap_bytes` and the
        servers that answered, or why not; nothing when this worker's servers do not listen."""
        folder = os.environ.get(heapprobe.VARIABLE)
        if not folder:
            return {}
        began = time.monotonic()
        got = heapprobe.read(folder, procstat.trees(roots))
        took = {"heap_s": round(time.monotonic() - began, 3)}
        if "heap_bytes" not in got:
            return {"heap_error": got["error"], **took}
        return {"heap_bytes": got["heap_bytes"], "heap_servers": got["servers"], **took}

    def _wave(
        self,
        env: str,
        paths: dict[str, LoadPath],
        level: int,
        round_no: int,
        waves: int,
        wave: int,
        deadline_s: float,
        model: LatencyModel | None,
    ) -> tuple[list[tuple[str, LoadPath]], Rolled, list[dict[str, Any]]]:
        """One batch of a round: its rollouts, what came back, and each rollout that differs from its path alone."""
        mismatches: list[dict[str, Any]] = []
        groups = shape.round_paths(list(paths), level, self.group, round_no * waves + wave)
        batch = [
            (shape.tag(self.ref, env, level, round_no, wave * len(groups) + g, m), paths[pid])
            for g, members in enumerate(groups)
            for m, pid in enumerate(members)
        ]
        rolled = self.roll(env, batch, deadline_s, model)
        for tag, path in batch:
            leaves = rolled.leaves.get(tag)
            if leaves is None:
                continue
            fields = sorted(observe.differing(path.alone, leaves) - path.masked)
            shown = observe.shown_side_by_side(path.alone, leaves, fields, SHOWN) if fields else []
            read = rolled.probes.get(tag)
            if path.probe_call and read != path.probe_expected:  # its own write only, whatever ran alone
                fields.append(PROBE_FIELD)
                shown.append({"field": PROBE_FIELD, "alone": _cut(path.probe_expected), "loaded": _cut(read)})
            if fields:
                mismatches.append({"path": path.id, "rollout": tag, "fields": fields, "differences": shown})
        return batch, rolled, mismatches

    def usage(self, env: str) -> dict[str, Any]:
        """The instance's servers together, and each server's memory (by its name in Gym's config)."""
        servers = {
            str(s["name"]): int(s["pid"])
            for s in self.statuses[env].servers
            if s.get("type") != "head" and s.get("pid")
        }
        return {**procstat.usage(self.roots(env)).to_json(), "servers_rss": procstat.rss_by_root(servers)}

    # ----- rolling out ---------------------------------------------------------------------------------------------
    def roll(
        self, env: str, rollouts: list[tuple[str, LoadPath]], deadline_s: float, latency: LatencyModel | None = None
    ) -> Rolled:
        """The rollouts at once, through the RL consumer; one batch per agent (RL sends one agent per batch), the
        batches concurrently; the model answering after `latency` (None: at once)."""
        by_agent: dict[str, list[tuple[str, LoadPath]]] = {}
        for item in rollouts:
            by_agent.setdefault(item[1].agent, []).append(item)
        expected = {
            tag: {kind: [key.replace(observe.PLACEHOLDER, tag) for key in keys] for kind, keys in path.untagged.items()}
            for tag, path in rollouts
        }
        self.endpoint.route({tag: (path.env, path.script) for tag, path in rollouts}, expected, latency)
        rolled = Rolled()
        try:
            if len(by_agent) == 1:
                parts = [self._batch(env, rollouts, deadline_s)]
            else:
                with ThreadPoolExecutor(len(by_agent)) as pool:
                    parts = list(pool.map(lambda items: self._batch(env, items, deadline_s), by_agent.values()))
        finally:
            self.endpoint.unroute([tag for tag, _ in rollouts])
            exchanges = self.endpoint.take({tag for tag, _ in rollouts})
        by_tag: dict[str, list[Any]] = {}
        for exchange in exchanges:
            by_tag.setdefault(exchange.rollout, []).append(exchange)
        probing = {tag: path.probe_call for tag, path in rollouts if path.probe_call}
        for tag, seen in by_tag.items():
            if tag in probing:
                rolled.probes[tag] = observe.tool_output(seen, probing[tag])
            rolled.attempts[tag], answered_all = observe.call_attempts(seen)
            if not answered_all:
                rolled.unanswered.add(tag)
            rolled.injected += sum(1 for e in seen if e.injected)
            rolled.waited_s += sum(e.waited_s for e in seen)
            rolled.untagged[tag] = {
                kind: [
                    request_key(kind, e.body).replace(tag, observe.PLACEHOLDER)
                    for e in seen
                    if e.kind == kind and e.status == 200
                ]
                for kind in UNTAGGED
            }
        for results, arrivals, error in parts:
            rolled.error = rolled.error or error
            for tag, gym_result in results.items():
                rolled.leaves[tag] = observe.observation(tag, by_tag.get(tag, []), gym_result)
            rolled.arrivals.update(arrivals)
        refused = [e for e in exchanges if e.status != 200 and not e.injected]
        if refused and not rolled.error:
            rolled.error = f"the endpoint refused {len(refused)} request(s): {refused[0].violation}"
        return rolled

    def saturated(self, envs: list[str], level: int, saturation: dict[str, Any], deadline_s: float) -> dict[str, Any]:
        """`level` rollouts of every environment at once, the policy server saturated from the start for
        `window_s` (load/sweep.toml [[saturation]]): per environment, how its batch ended and when (from the window's
        end), the most attempts one call took, whether a rollout came back with a call never answered (a reward
        without an answer), and the rollouts that came back unlike their path alone."""
        window = float(saturation["window_s"])
        batches = {}
        for env in envs:
            paths = {p.id: p for p in self.paths.get(env, [])}
            groups = shape.round_paths(list(paths), level, self.group, 0)
            batches[env] = [
                (shape.tag(self.ref, env, level, -1000, g, m) + f"/{saturation['name']}", paths[pid])
                for g, members in enumerate(groups)
                for m, pid in enumerate(members)
            ]
        began = time.monotonic()
        self.endpoint.saturate(Saturation(**saturation), until=began + window)

        def one(env: str) -> tuple[str, Rolled, float]:
            rolled = self.roll(env, batches[env], window + deadline_s)
            return env, rolled, time.monotonic()

        try:
            with ThreadPoolExecutor(max(1, len(envs))) as pool:
                done = list(pool.map(one, [e for e in envs if batches[e]]))
        finally:
            self.endpoint.saturate(None)
        out: dict[str, Any] = {}
        for env, rolled, ended in done:
            differ = []
            for tag, path in batches[env]:
                leaves = rolled.leaves.get(tag)
                masked = path.masked | observe.retry_leaves(path.alone, leaves or {})
                shown = observe.first_differences(path.alone, leaves, masked) if leaves is not None else []
                if shown:
                    differ.append({"path": path.id, "rollout": tag, "differences": shown})
            out[env] = {
                "rollouts": len(batches[env]),
                "returned": len(rolled.leaves),
                "error": rolled.error,
                "ended_after_window_s": round(ended - began - window, 3),
                "max_attempts": max(rolled.attempts.values(), default=0),
                "injected": rolled.injected,
                "unearned": sorted(t for t in rolled.unanswered if t in rolled.leaves),
                "differ": differ[:5],
                "differed": len(differ),
            }
        return {"saturation": saturation["name"], "level": level, "window_s": window, "envs": out}

    def _batch(
        self, env: str, items: list[tuple[str, LoadPath]], deadline_s: float
    ) -> tuple[dict[str, Any], dict[str, float], str]:
        batch = grpo_batch([path.datum for _, path in items])
        for (tag, _), row in zip(items, batch["extra_env_info"], strict=True):
            params = row.setdefault("responses_create_params", {})
            params["metadata"] = {**(params.get("metadata") or {}), ROLLOUT_TAG: tag}
        try:
            rollout = run_rollout_sync(
                self.handles[env].actor,
                batch,
                self.tokenizer,
                GENERATION,
                timeout_s=deadline_s,
                timeout_origin="the load round's deadline (gymgate/load/sweep.toml)",
                watch=(lambda: self.watch(env)) if self.watch else None,
            )
        except Exception as exc:  # noqa: BLE001 - a lost batch is a finding of the round, said whole
            said = strip_ansi(f"{type(exc).__name__}: {exc}")[:1500]
            return {}, {}, said + "\n" + strip_ansi("".join(traceback.format_exception(exc)))[-800:]
        tags = [tag for tag, _ in items]
        results = {tag: r["gym_result"] for tag, r in zip(tags, rollout.results, strict=True)}
        return results, dict(zip(tags, rollout.arrivals, strict=True)), ""


def grpo_batch(data: list[dict[str, str]]) -> dict[str, Any]:
    """The batch RL makes of these rows: when they are whole groups of one size (each row `k` times in a row, as a
    round's are: shape.round_paths), each distinct row processed once and repeated by RL's own GRPO repeat (every
    generation its own deep copy); else each row as it comes."""
    size = next((i for i, d in enumerate(data) if d is not data[0]), len(data))
    groups = [data[i : i + size] for i in range(0, len(data), size)]
    if size > 1 and all(len(g) == size and all(d is g[0] for d in g) for g in groups):
        return repeat_interleave(collate([process_datum(g[0], i) for i, g in enumerate(groups)]), size)
    return collate([process_datum(datum, i) for i, datum in enumerate(data)])


def _cut(text: str | None, limit: int = 300) -> str:
    """A tool's answer as a finding shows it."""
    return "(no answer)" if text is None else text if len(text) <= limit else text[:limit] + "…"
