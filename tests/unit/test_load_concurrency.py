"""What concurrency alone shows (issue 69), on synthetic rounds and a real socket: the model's latency (seeded, the
same on both refs, bounded), the event-loop probe against a server whose loop is held, the lag and scaling verdicts
and their figures."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gymgate.endpoint.latency import LatencyModel, call_key, models, named
from gymgate.load import declared
from gymgate.load.judge import judge
from gymgate.load.loopprobe import LoopProbe
from gymgate.load.measures import BASELINE, CANDIDATE, Side, server_lags
from gymgate.verdict import LoadCategory

THRESHOLDS = declared.thresholds()


def test_every_declared_latency_model_names_its_source_and_the_default_is_declared():
    default, found = models()
    assert default in found and "instant" in found
    for model in found.values():
        assert model.source and model.title and model.scale > 0
        assert model.ttft_p99_ms >= model.ttft_ms >= 0 and model.tpot_p99_ms >= model.tpot_ms >= 0
    assert named("") == found[default]
    with pytest.raises(ValueError, match="no latency model"):
        named("nonesuch")


def test_a_calls_wait_is_seeded_by_its_place_in_the_run_never_its_ref_and_bounded_by_the_p99():
    model = named()
    a = call_key("baseline/mcqa/L8/r2/g1/3", "policy", 0)
    b = call_key("candidate/mcqa/L8/r2/g1/3", "policy", 0)
    assert a == b  # both refs wait alike for the same call: the spread cancels in their ratio
    assert model.delay_s(a, 30) == model.delay_s(b, 30)
    waits = [model.delay_s(call_key(f"x/e/L8/r0/g{i}/0", "policy", 0), 30) for i in range(400)]
    bound = model.scale * (model.ttft_p99_ms + model.tpot_p99_ms * 29) / 1000
    assert max(waits) <= bound + 1e-9 and min(waits) > 0
    assert len(set(waits)) > 300  # drawn, not constant
    median = sorted(waits)[200]
    assert 0.7 * model.mean_call_s(30) < median < 1.3 * model.mean_call_s(30)
    assert model.delay_s(a, 300) > model.delay_s(a, 30)  # longer answers take longer
    instant = named("instant")
    assert instant.instant and instant.delay_s(a, 30) == 0.0


class HeldLoop:
    """A real asyncio HTTP server on loopback answering every request at once, whose loop a blocking call holds for
    `hold_s` every `every_s` (a verifier that sleeps on the event loop)."""

    def __init__(self, hold_s: float, every_s: float = 0.05):
        self.hold_s, self.every_s = hold_s, every_s
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        async def answer(reader, writer):
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()

        async def hold():
            while True:
                await asyncio.sleep(self.every_s)
                time.sleep(self.hold_s)  # the defect: a blocking call on the loop

        server = await asyncio.start_server(lambda r, w: answer(r, w), "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        holding = asyncio.create_task(hold()) if self.hold_s else None
        self._ready.set()
        self._stop = asyncio.Event()
        await self._stop.wait()
        if holding:
            holding.cancel()
        server.close()

    def __enter__(self):
        self._thread.start()
        assert self._ready.wait(5)
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)


@pytest.mark.parametrize("hold_s, held", [(0.0, False), (0.06, True)])
def test_the_probe_sees_a_held_loop_and_not_a_free_one(hold_s, held):
    with HeldLoop(hold_s) as server, LoopProbe({"resources": ("127.0.0.1", server.port)}, 0.01) as probe:
        time.sleep(1.0)
    lags = probe.lags()
    assert len(lags["resources"]["ms"]) >= 10 and lags["resources"]["failed"] == 0
    worst = server_lags({"loop_lag": lags})["resources"]
    assert (worst >= 20) == held, lags


def test_a_server_the_probe_cannot_reach_counts_as_held():
    with LoopProbe({"gone": ("127.0.0.1", 9)}, 0.05) as probe:  # nothing listens on port 9 here
        time.sleep(0.2)
    assert probe.lags()["gone"]["failed"] > 0
    assert server_lags({"loop_lag": probe.lags()})["gone"] >= 10_000


def lag_rounds(lag_ms: dict[int, float], throughput: dict[int, float], server: str = "resources") -> list[dict]:
    out = []
    for r in range(5):
        for level, thr in throughput.items():
            jitter = 1 + 0.02 * ((r * 7 + level) % 3 - 1)
            probes = [lag_ms[level] * jitter * (0.5 + i / 20) for i in range(20)]
            out.append(
                {
                    "env": "e",
                    "level": level,
                    "round": r,
                    "rollouts": level,
                    "completed": level,
                    "error": "",
                    "wall_s": level / (thr * jitter),
                    "latencies_s": [0.5 * jitter] * level,
                    "gym_cpu_s": 0.01 * level,
                    "endpoint_cpu_s": 0.0,
                    "model_wait_s": 0.4 * level,
                    "loop_lag": {server: {"ms": probes, "failed": 0}, "agent": {"ms": [1.0] * 20, "failed": 0}},
                    "after": {"cpu_s": 0, "rss_bytes": 900_000_000, "fds": 500, "processes": 8},
                    "mismatches": [],
                }
            )
    return out


def side(lag_ms, throughput) -> Side:
    return Side(rounds=lag_rounds(lag_ms, throughput), warm={"processes": 8}, settled={"processes": 8})


SCALES = {1: 2.0, 8: 15.0, 32: 55.0, 128: 180.0}
FLAT = {1: 2.0, 8: 2.1, 32: 2.1, 128: 2.2}  # one at a time, whatever is in flight
FREE = {1: 1.5, 8: 2.0, 32: 3.0, 128: 6.0}


def test_a_held_loop_regresses_naming_its_server_and_level_and_an_unchanged_one_does_not():
    same = judge({"e": {BASELINE: side(FREE, SCALES), CANDIDATE: side(FREE, SCALES)}}, THRESHOLDS)
    assert same.code == 0
    assert {m.category for m in same.metrics if m.metric in ("loop_lag_ms", "speedup")} == {LoadCategory.NO_CHANGE}
    held = {lv: 60.0 + lv for lv in FREE}
    verdict = judge({"e": {BASELINE: side(FREE, SCALES), CANDIDATE: side(held, SCALES)}}, THRESHOLDS)
    found = [m for m in verdict.metrics if m.metric == "loop_lag_ms" and m.category == LoadCategory.REGRESSION]
    assert {m.level for m in found} == set(FREE) and verdict.code == 1
    figure = found[0].figure(verdict.confidence)
    assert figure.startswith("e: event-loop lag") and "at 1 in flight" in figure and "resources" in figure


def test_a_gym_that_stops_scaling_is_serialized_at_the_level_it_stopped():
    verdict = judge({"e": {BASELINE: side(FREE, SCALES), CANDIDATE: side(FREE, FLAT)}}, THRESHOLDS)
    (found,) = [m for m in verdict.metrics if m.metric == "speedup"]
    assert found.category == LoadCategory.REGRESSION and verdict.code == 1
    figure = found.figure(verdict.confidence)
    assert "128 in flight do the work of 1.1 at once, the baseline's of 9" in figure, figure
    assert "serialized at 1 in flight" in figure, figure


def test_a_run_that_did_not_probe_judges_no_lag_and_one_level_judges_no_scaling():
    bare = lag_rounds(FREE, {1: 2.0})
    for r in bare:
        r["loop_lag"] = {}
    verdict = judge({"e": {BASELINE: Side(rounds=bare), CANDIDATE: Side(rounds=bare)}}, THRESHOLDS)
    assert not [m for m in verdict.metrics if m.metric in ("loop_lag_ms", "speedup")]


def test_the_storm_outlasts_a_bounded_clients_retries_and_fails_judge_calls_too():
    kinds = {k.name: k for k in declared.saturated().kinds}
    storm = kinds["storm_429"]
    assert storm.kind == "http_429" and set(storm.callers) == {"policy", "judge"}
    # 0.7.0's client: 3 attempts 0.5 s apart. An unbounded one makes window_s / 0.5 attempts: beyond max_attempts.
    assert storm.window_s / 0.5 > declared.saturated().max_attempts


def test_a_latency_model_round_trips_through_the_record():
    model = named()
    assert LatencyModel(**model.to_json()) == model


def test_a_level_is_planned_on_the_gyms_cpu_and_each_refs_share_of_the_cores():
    sweep = declared.sweep()
    # 120 ms alone, 30 ms of it the Gym's CPU, half a second on the model, both refs at once on two cores
    known, _ = sweep.levels_for(0.12, cores=2, wait_s=0.5, sides=2, cpu_s=0.03)
    guessed, why = sweep.levels_for(0.12, cores=2, wait_s=0.5, sides=2)  # the whole wall taken as CPU
    assert 128 in known and 128 not in guessed and "round_budget_s" in why[128]
    assert sweep.batch_s(16, 0.12, 1, 0.5, 0.03) == pytest.approx(0.62)  # the wait, not the CPU, bounds a batch of 16
    assert sweep.round_deadline(16, 2.0) == max(sweep.round_min_s, sweep.round_slack * 2.0)


def test_the_session_probe_writes_then_reads_before_the_paths_own_calls_and_is_declared_whole():
    from gymgate.endpoint.script import Script, ToolCall, Turn  # noqa: PLC0415 - this test only
    from gymgate.variants.sessions import SessionDecl, read_your_writes  # noqa: PLC0415 - this test only

    decl = SessionDecl.from_data(
        {
            "read_your_writes": {
                "write": {"name": "note_add", "arguments": {"text": "mine"}},
                "read": {"name": "note_list", "arguments": {}},
            }
        },
        "case.toml",
    )
    work = Turn(tool_calls=(ToolCall("reply", "{}"),))
    script = Script(case="e", mode="accepted", turns=(Turn(content="thinking"), work, Turn(content="done")))
    probe = read_your_writes(script, decl)
    assert [t.tool_calls[0].name if t.tool_calls else t.content for t in probe.turns] == [
        "thinking",
        "note_add",
        "note_list",
        "reply",
        "done",
    ]
    assert probe.inserted_calls == (0, 1)  # the path's own call keeps its declared output
    assert read_your_writes(replace_turns(script, (Turn(content="no tools"),)), decl) is None
    assert read_your_writes(script, SessionDecl()) is None
    with pytest.raises(ValueError, match="read_your_writes"):
        SessionDecl.from_data({"read_your_writes": {"write": {"name": "note_add"}}}, "case.toml")


def replace_turns(script, turns):
    from dataclasses import replace  # noqa: PLC0415 - this test only

    return replace(script, turns=turns)


def test_workplace_assistant_declares_a_session_probe():
    from gymgate.cases.named import load_environments  # noqa: PLC0415 - this test only

    (env,) = load_environments(["workplace_assistant"])
    probe = env.session.read_your_writes
    assert probe.write.name == "email_send_email" and probe.read.name == "email_search_emails"


def test_a_probes_read_is_the_tool_message_answering_its_call():
    from types import SimpleNamespace  # noqa: PLC0415 - this test only

    from gymgate.load.observe import tool_output  # noqa: PLC0415 - this test only

    asked = [
        SimpleNamespace(body={"messages": [{"role": "user", "content": "hi"}]}),
        SimpleNamespace(body={"messages": [{"role": "tool", "tool_call_id": "call_1_0", "content": "sent"}]}),
        SimpleNamespace(
            body={
                "messages": [
                    {"role": "tool", "tool_call_id": "call_2_0", "content": [{"type": "text", "text": "1 email"}]}
                ]
            }
        ),
    ]
    assert tool_output(asked, "call_2_0") == "1 email" and tool_output(asked, "call_1_0") == "sent"
    assert tool_output(asked, "call_9_0") is None


def test_memory_growth_is_fitted_within_each_level_and_a_baseline_giving_memory_back_is_flat():
    from gymgate.load.judge import growth  # noqa: PLC0415 - this test only
    from gymgate.load.stats import pooled_slope  # noqa: PLC0415 - this test only

    # a step between levels (pools grown for more in flight) and flat within each: no slope
    b, _ = pooled_slope([([3, 6, 9], [100, 100, 100]), ([25, 41, 57], [130, 130, 130])])
    assert b == 0.0
    b, se = pooled_slope([([3, 6, 9], [100, 103, 106]), ([25, 41, 57], [200, 216, 232])])
    assert b == pytest.approx(1.0) and se == pytest.approx(0.0)

    def side_of(rss_mib_by_round: list[float]) -> Side:
        rounds = lag_rounds({1: 1.5, 16: 2.0}, {1: 2.0, 16: 10.0})
        for r, mib in zip(sorted(rounds, key=lambda r: (r["level"], r["round"])), rss_mib_by_round, strict=True):
            r["after"] = {**r["after"], "rss_bytes": int(mib * 2**20)}
        return Side(rounds=sorted(rounds, key=lambda r: (r["level"], r["round"])))

    # the baseline gave 23 MiB back at one reading; the candidate grew 8 MiB in all: not a leak
    base = side_of([5559] * 5 + [5536] * 5)
    cand = side_of([5541] * 5 + [5542, 5547, 5549, 5546, 5549])
    assert growth("e", "rss_slope_kb", base, cand, THRESHOLDS, 1).category == LoadCategory.NO_CHANGE
    # a candidate keeping 1 MiB a rollout in every level
    leak = side_of([5541 + i for i in range(5)] + [5600 + 16 * i for i in range(5)])
    found = growth("e", "rss_slope_kb", base, leak, THRESHOLDS, 1)
    assert found.category == LoadCategory.REGRESSION, found


def test_a_servers_heap_is_read_after_a_collection_and_moves_with_what_it_keeps(tmp_path):
    """The heap probe a forked Gym server listens with (services/launcher/heapprobe.py), here in this process: a
    reading is Python's blocks and the C allocator's chunks in use, after a collection; what the process keeps (large
    strings: the C allocator; small dicts: Python's) shows byte for byte, garbage does not; a process that does not
    listen is not read, and none listening is an error, never a zero."""
    import os  # noqa: PLC0415 - this test only

    from gymgate.services.launcher import heapprobe  # noqa: PLC0415 - this test only

    folder = tmp_path / "h"
    folder.mkdir()
    assert "error" in heapprobe.read(str(folder), [os.getpid()])
    heapprobe.listen(str(folder))
    first = heapprobe.read(str(folder), [os.getpid(), 1])
    assert first["servers"] == 1 and first["heap_bytes"] > 0
    kept = ["k" * 32768 for _ in range(64)] + [{"row": i} for i in range(4096)]
    _ = [[{"cycle": i}] for i in range(4096)]  # garbage: freed, never kept
    grown = heapprobe.read(str(folder), [os.getpid()])["heap_bytes"] - first["heap_bytes"]
    assert 64 * 32768 + 4096 * 64 <= grown <= 64 * 32768 + 4096 * 400 + 2**20, grown
    assert kept


def test_heap_growth_is_judged_where_both_refs_read_the_heap_and_sees_what_resident_memory_cannot():
    """Resident memory stepping by megabytes hides a 48 KiB-a-rollout leak the heap shows plainly; a side whose
    servers did not answer (not forked by the launcher) leaves the heap unjudged, never insufficient data."""
    from gymgate.load.judge import judge, memory_metric  # noqa: PLC0415 - this test only

    def side_of(leak_kib: float, heap: bool = True) -> Side:
        rounds = sorted(lag_rounds({1: 1.5, 16: 2.0}, {1: 2.0, 16: 10.0}), key=lambda r: (r["level"], r["round"]))
        done = 0
        for i, r in enumerate(rounds):
            done += r["rollouts"]
            steps = (i * 7919 % 5) * 6 * 2**20  # an allocator taking and returning arenas
            r["after"] = {**r["after"], "anon_bytes": 5 * 2**30 + steps + int(leak_kib * 1024 * done)}
            if heap:
                r["after"] |= {"heap_bytes": 2**30 + (i % 2) * 4096 + int(leak_kib * 1024 * done), "heap_servers": 3}
        return Side(rounds=rounds, warm={"processes": 8}, settled={"processes": 8})

    verdict = judge({"e": {BASELINE: side_of(0), CANDIDATE: side_of(48)}}, THRESHOLDS, 1)
    found = {m.metric: m.category for m in verdict.metrics}
    assert found["heap_slope_kb"] == LoadCategory.REGRESSION and found["rss_slope_kb"] != LoadCategory.REGRESSION
    assert memory_metric(side_of(0), side_of(48), 1) == "heap_slope_kb"
    unread = judge({"e": {BASELINE: side_of(0), CANDIDATE: side_of(0, heap=False)}}, THRESHOLDS, 1)
    assert "heap_slope_kb" not in {m.metric for m in unread.metrics} and unread.code == 0, unread.failing()
