"""The load verdict's arithmetic and its categories, on synthetic rounds (the real load runs: tests/integration/
test_load_mutants.py): GRPO shapes, the bootstrap interval, slopes, each category and the exit code, what fails
closed."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from gymgate.endpoint.latency import named as latency_model
from gymgate.errors import EXIT_UNJUDGED
from gymgate.load import declared, shape
from gymgate.load.interleave import judged, new_record
from gymgate.load.judge import judge
from gymgate.load.measures import BASELINE, CANDIDATE, SCHEMA, Side
from gymgate.load.merge import merge_unit
from gymgate.load.report import curves_svg, load_html, load_markdown, verdict_lines
from gymgate.load.stats import percentile, ratio_interval, slope
from gymgate.refs.source import KIND_PIN, GymSource
from gymgate.verdict import LoadCategory, LoadCorrectness

THRESHOLDS = declared.thresholds()
SECOND = declared.sweep().levels[1]  # the lowest concurrent level


def test_a_round_is_whole_grpo_groups_mixed_across_rows():
    groups = shape.round_paths(["a", "b", "c"], level=8, group=4, offset=0)
    assert groups == [["a"] * 4, ["b"] * 4]
    assert shape.round_paths(["a", "b", "c"], level=8, group=4, offset=2) == [["c"] * 4, ["a"] * 4]
    assert shape.round_paths(["a"], level=1, group=4, offset=0) == [["a"]]  # one rollout: a group of one
    assert shape.round_paths([], level=8, group=4, offset=0) == []


def test_the_declared_sweep_is_capped_by_the_machine_and_rounds_run_enough_rollouts():
    sweep = declared.sweep()
    assert list(sweep.levels) == sorted(set(sweep.levels))
    driven, above = sweep.driven(cores=1)
    assert all(x <= sweep.cap_per_core for x in driven) and all(x > sweep.cap_per_core for x in above)
    assert sweep.round_deadline(1) >= sweep.round_min_s


def test_a_slow_environment_is_driven_at_the_levels_the_machine_can_carry():
    sweep = declared.sweep()
    fast, none = sweep.levels_for(0.005, cores=2, wait_s=0.5)  # 5 ms of Gym CPU a rollout, 0.5 s on the model
    driven, above = sweep.driven(cores=2)
    assert fast == driven and set(none) == set(above) and all("above" in why for why in none.values())
    assert driven[-1] == 512  # RL's step on two cores: the rollouts wait on the model, the CPU keeps up
    # The CPU, not the wait, bounds a level: 50 ms a rollout is ~13 s of CPU for 512 on two cores
    busy, why_not = sweep.levels_for(0.05, cores=2, wait_s=0.5)
    assert 512 not in busy and "round_budget_s" in why_not[512]
    assert sweep.levels_for(0.03, cores=16)[0][-1] == 512  # RL's step, from 16 cores (when a batch fits)
    slow, why = sweep.levels_for(5.0, cores=2)  # code_gen: its unit tests take seconds
    assert slow == (sweep.levels[0],) and set(why) == set(sweep.levels[1:])
    assert "round_budget_s" in why[sweep.levels[1]]

    # The warm-up measures each level's batch: a round drives the levels that fit, with as many batches as fit.
    levels, waves, why = sweep.calibrated({1: 0.03, 8: 0.2, 32: 0.7, 64: sweep.round_budget_s * 2})
    assert levels == (1, 8, 32) and set(why) == {64} and "took" in why[64]
    assert waves[1] * 1 >= sweep.min_rollouts or waves[1] * 0.03 <= sweep.round_budget_s
    assert all(
        waves[x] * {1: 0.03, 8: 0.2, 32: 0.7}[x] <= max(sweep.round_budget_s, {1: 0.03, 8: 0.2, 32: 0.7}[x])
        for x in levels
    )
    assert sweep.calibrated({1: 5.0})[:2] == ((1,), {1: 1})  # one five-second batch a round: the first level always


def test_statistics():
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([5], 95) == 5
    point, low, high = ratio_interval([10, 10, 10, 10], [20, 20, 20, 20], 0.95, 200)
    assert (point, low, high) == (2.0, 2.0, 2.0)
    point, low, high = ratio_interval([9, 10, 11, 10, 10], [18, 20, 22, 20, 21], 0.95, 500)
    assert low <= point <= high and low > 1.5
    b, se = slope([1, 2, 3, 4], [2, 4, 6, 8])
    assert b == pytest.approx(2) and se == pytest.approx(0)
    assert slope([1], [1]) == (0.0, math.inf)


def rounds(cpu_ms: float, throughput: float = 50.0, rss_kib_per: float = 0.0, fds_per: float = 0.0, levels=(1, 8)):
    out, done = [], 0
    for r in range(5):
        for level in levels:
            n = 16 if level < 16 else level
            done += n
            jitter = 1 + 0.01 * ((r * 7 + level) % 3 - 1)
            out.append(
                {
                    "env": "e",
                    "level": level,
                    "round": r,
                    "rollouts": n,
                    "completed": n,
                    "error": "",
                    "wall_s": n / throughput * jitter,
                    "latencies_s": [0.02 * jitter] * n,
                    "gym_cpu_s": cpu_ms * n / 1000 * jitter,
                    "endpoint_cpu_s": 0.001 * n,
                    "after": {
                        "cpu_s": 0,
                        "rss_bytes": int(900e6 + rss_kib_per * 1024 * done),
                        "fds": int(500 + fds_per * done),
                        "processes": 8,
                    },
                    "mismatches": [],
                }
            )
    return out


def side(**kw) -> Side:
    return Side(rounds=rounds(**kw), warm={"processes": 8, "fds": 500}, settled={"processes": 8, "fds": 500})


def categories(verdict):
    return {(m.metric, m.level): m.category for m in verdict.metrics}


def test_the_same_figures_on_both_sides_are_no_change_and_exit_0():
    verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=15)}}, THRESHOLDS)
    assert set(categories(verdict).values()) == {LoadCategory.NO_CHANGE}
    assert [c.category for c in verdict.correctness] == [LoadCorrectness.HOLDS]
    assert verdict.code == 0 and verdict_lines(verdict)[0] == "load: no regression under load"


def test_more_cpu_per_rollout_beyond_the_noise_is_a_regression_with_its_figure():
    verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=30)}}, THRESHOLDS)
    found = [m for m in verdict.metrics if m.category == LoadCategory.REGRESSION]
    assert {(m.metric, m.level) for m in found} == {("cpu_per_rollout_ms", 1), ("cpu_per_rollout_ms", 8)}
    figure = found[0].figure(verdict.confidence)
    assert figure.startswith("e: Gym CPU per rollout 15 → 30 ms, +100 % (95 %: +") and "at 1 in flight" in figure
    assert verdict.code == 1 and "REGRESSED" in verdict_lines(verdict)[0]
    better = judge({"e": {BASELINE: side(cpu_ms=30), CANDIDATE: side(cpu_ms=15)}}, THRESHOLDS)
    assert better.code == 0 and LoadCategory.IMPROVED in categories(better).values()


def test_a_change_below_the_metrics_floor_is_no_change_however_significant():
    verdict = judge({"e": {BASELINE: side(cpu_ms=1.0), CANDIDATE: side(cpu_ms=2.0)}}, THRESHOLDS)  # +100 %, +1 ms
    assert categories(verdict)[("cpu_per_rollout_ms", 1)] == LoadCategory.NO_CHANGE


def test_a_leak_is_a_slope():
    verdict = judge(
        {"e": {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=15, rss_kib_per=300, fds_per=1)}}, THRESHOLDS
    )
    found = categories(verdict)
    assert found[("rss_slope_kb", None)] == found[("fd_slope", None)] == LoadCategory.REGRESSION
    assert verdict.code == 1
    # A clean 40 KiB a rollout is seen; a growth below the floor is not, and the figure says what this run could see.
    clean = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=15, rss_kib_per=40)}}, THRESHOLDS)
    assert categories(clean)[("rss_slope_kb", None)] == LoadCategory.REGRESSION
    small = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=15, rss_kib_per=12)}}, THRESHOLDS)
    (rss,) = [m for m in small.metrics if m.metric == "rss_slope_kb"]
    assert rss.category == LoadCategory.NO_CHANGE and "this run sees a leak from" in rss.why
    # One step of the allocator (12 MiB taken at once, halfway) is not a trend, however it fits as a slope.
    stepped = Side(rounds=sorted(rounds(cpu_ms=15), key=lambda r: r["level"]))  # level by level, as a run goes
    for r in stepped.rounds[2:]:  # 12 MiB at once, between the lowest level's second and third reading, kept
        r["after"] = {**r["after"], "rss_bytes": r["after"]["rss_bytes"] + 12 * 2**20}
    (rss,) = [
        m
        for m in judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: stepped}}, THRESHOLDS).metrics
        if m.metric == "rss_slope_kb"
    ]
    assert rss.category != LoadCategory.REGRESSION and rss.change > THRESHOLDS.of("rss_slope_kb").floor, rss
    # A baseline whose memory fell is no evidence against a candidate that did not grow (an A/A false alarm, seen).
    fell = side(cpu_ms=15)
    for r in fell.rounds[len(fell.rounds) // 2 :]:
        r["after"] = {**r["after"], "rss_bytes": r["after"]["rss_bytes"] - 7 * 2**20}
    assert categories(judge({"e": {BASELINE: fell, CANDIDATE: side(cpu_ms=15)}}, THRESHOLDS))[
        ("rss_slope_kb", None)
    ] in (LoadCategory.NO_CHANGE, LoadCategory.IMPROVED)


def test_children_left_after_the_load():
    leaky = replace(side(cpu_ms=15), settled={"processes": 300, "fds": 500})
    verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: leaky}}, THRESHOLDS)
    assert categories(verdict)[("children_left", None)] == LoadCategory.REGRESSION


def test_a_rollout_that_differs_from_its_path_alone_is_regressed_at_the_first_level():
    cand = side(cpu_ms=15)
    bad = next(r for r in cand.rounds if r["level"] == 8)
    bad["mismatches"] = [
        {
            "path": "e:accepted",
            "rollout": "t",
            "differences": [{"field": "result.reward", "alone": "1.0", "loaded": "0.0"}],
        }
    ]
    verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: cand}}, THRESHOLDS)
    (c,) = verdict.correctness
    assert c.category == LoadCorrectness.REGRESSED and c.level == 8 and "result.reward" in c.figure()
    assert verdict.code == 1
    same = judge({"e": {BASELINE: cand, CANDIDATE: cand}}, THRESHOLDS)
    assert same.correctness[0].category == LoadCorrectness.SAME_FAIL and same.code == 0


def test_a_lost_rollout_is_never_a_pass_and_too_few_rounds_are_insufficient_data():
    cand = side(cpu_ms=15)
    for r in cand.rounds:
        if r["level"] == 8:
            r["completed"] = r["rollouts"] - 1
    verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: cand}}, THRESHOLDS)
    assert verdict.correctness[0].category == LoadCorrectness.REGRESSED and "lost" in verdict.correctness[0].detail
    assert ("throughput", 8) not in categories(verdict) and ("throughput", 1) in categories(verdict)
    assert verdict.code == 1  # the level's cost is not comparable: correctness fails it, and the level below is judged


def test_a_side_that_could_not_run_is_not_judged_and_never_exits_0():
    verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: Side(error="the worker did not start")}}, THRESHOLDS)
    assert verdict.code == EXIT_UNJUDGED and "not judged" in verdict.failing()[0]
    assert verdict_lines(verdict)[0] == "load: NOT JUDGED under load"


def test_an_environment_a_refs_gym_does_not_have_is_not_compared_unless_the_candidate_removed_it():
    """As the acceptance comparison: in neither ref, or new in the candidate, it is said and not held against the
    bump; removed by the candidate, it is not judged here (exit 2; the acceptance comparison regresses it)."""
    gone = "resources_servers/x/configs/x.yaml is not in nemo-gym 0.2.0"
    absent = Side(error=gone, absent=gone)
    for candidate, why in ((absent, "in neither ref"), (side(cpu_ms=15), "new in the candidate")):
        verdict = judge({"e": {BASELINE: absent, CANDIDATE: candidate}}, THRESHOLDS)
        assert verdict.code == 0 and verdict.metrics == [] and verdict.unjudged == []
        assert verdict.not_compared == [
            f"e: not compared under load: {why}{', nothing to compare it with' if candidate is not absent else ''} ({gone})"
        ]
        assert verdict_lines(verdict) == ["load: no regression under load", f"  {verdict.not_compared[0]}"]
    removed = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: absent}}, THRESHOLDS)
    assert removed.code == EXIT_UNJUDGED and removed.not_compared == [] and gone in removed.unjudged[0]


def test_the_report_shows_curves_and_figures():
    sides = {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=30)}
    sides[CANDIDATE].warm["servers_rss"] = {"mcqa": 200 * 2**20, "policy_model": 150 * 2**20}
    sides[CANDIDATE].settled["servers_rss"] = {"mcqa": 260 * 2**20, "policy_model": 150 * 2**20}
    record = {
        "refs": {BASELINE: {"source": {"name": "0.6.0"}}, CANDIDATE: {"source": {"name": "0.7.0"}}},
        "levels": [1, 8],
        "group": 4,
        "declared": declared.digest(),
        "envs": {"e": {s: {"rounds": v.rounds, "warm": v.warm, "settled": v.settled} for s, v in sides.items()}},
    }
    verdict = judge({"e": sides}, THRESHOLDS)
    text = load_markdown(record, verdict)
    assert "# Under load: 0.6.0 → 0.7.0" in text and "| 8 |" in text and "![e under load](e.svg)" in text
    assert (
        "candidate: each server's memory, after the warm-up → after the load: mcqa 200 → 260 MiB, policy_model 150"
        in text
    )
    svg = curves_svg("e", sides)
    assert svg.startswith("<svg") and svg.count("<polyline") == 4  # throughput and p95, each ref
    page = load_html(record, verdict)
    assert page.count("<svg") == 1 and "FAIL" in page and "Gym CPU per rollout 15 → 30 ms" in page
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_the_kernels_accounting_of_a_process_tree(tmp_path):
    """procstat reads what the load judges from /proc: a child's CPU, a file kept open, a socket apart, a zombie."""
    import os  # noqa: PLC0415 - this test only
    import socket  # noqa: PLC0415 - this test only
    import subprocess  # noqa: PLC0415 - this test only
    import sys  # noqa: PLC0415 - this test only

    from gymgate.load import procstat  # noqa: PLC0415 - this test only

    code = "import time; sum(i for i in range(3_000_000)); print('ready', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"  # its start-up is over: its descriptors stay as they are
        before = procstat.usage([os.getpid()])
        assert before.processes >= 2 and before.rss_bytes > 0 and before.cpu_s > 0
        held = [open(tmp_path / f"f{i}", "w") for i in range(5)]  # noqa: SIM115 - held open on purpose
        sock = socket.socket()
        after = procstat.usage([os.getpid()])
        assert after.fds - before.fds == 5 and after.sockets - before.sockets == 1
        each = procstat.rss_by_root({"me": os.getpid(), "child": child.pid})  # each tree's memory, named
        assert 0 < each["child"] < each["me"] and procstat.rss_by_root({"gone": 2**22 + 7}) == {"gone": 0}
        for f in held:
            f.close()
        sock.close()
    finally:
        child.kill()
    zombie = procstat.usage([os.getpid()])  # killed, not yet waited for: still a process of the tree
    assert zombie.processes == before.processes
    child.wait()
    assert procstat.usage([os.getpid()]).processes == before.processes - 1
    assert procstat.group(os.getpgrp()) is not None


def test_a_reviewed_slowdown_is_acknowledged_within_its_bound(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a repository's review is named from where one runs
    """A `[[load]]` entry in the pair's ack file accepts the environment's metric getting worse up to `up_to`, with a
    reason: shown, not failed; a larger change, an entry without a reason, another pair's entry accept nothing."""
    from gymgate.compare import acks  # noqa: PLC0415 - this test only
    from gymgate.load.judge import acknowledge  # noqa: PLC0415 - this test only

    pair = {"baseline": {"name": "0.6.0", "digest": "sha256:a"}, "candidate": {"name": "0.7.0", "digest": "sha256:b"}}

    def verdict_with(entries: str):
        (tmp_path / "pair.toml").write_text(
            '[baseline]\nname = "0.6.0"\ndigest = "sha256:a"\n[candidate]\nname = "0.7.0"\ndigest = "sha256:b"\n'
            + entries
        )
        reviewed = acks.load_acks(acks.read(tmp_path), pair["baseline"], pair["candidate"])
        verdict = judge({"e": {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=30)}}, THRESHOLDS)
        return acknowledge(verdict, reviewed, THRESHOLDS)

    accepted = verdict_with('[[load]]\nenv = "e"\nmetric = "cpu_per_rollout_ms"\nup_to = 2.5\nreason = "new parser"\n')
    assert accepted.code == 0 and LoadCategory.ACKNOWLEDGED in categories(accepted).values()
    assert any("acknowledged:" in line and "new parser" in line for line in verdict_lines(accepted))
    assert accepted.stale_acks == []
    beyond = verdict_with('[[load]]\nenv = "e"\nmetric = "cpu_per_rollout_ms"\nup_to = 1.5\nreason = "new parser"\n')
    assert beyond.code == 1  # +100 % is more than the +50 % reviewed
    unreasoned = verdict_with('[[load]]\nenv = "e"\nmetric = "cpu_per_rollout_ms"\nup_to = 2.5\nreason = ""\n')
    assert unreasoned.code == 1
    stale = verdict_with('[[load]]\nenv = "other"\nmetric = "throughput"\nup_to = 0.5\nreason = "x"\n')
    assert stale.code == 1 and stale.stale_acks == ["pair.toml load 1"]


def test_a_saturated_servers_attempts_are_counted_per_call():
    from types import SimpleNamespace as X  # noqa: PLC0415 - this test only

    from gymgate.load.observe import call_attempts  # noqa: PLC0415 - this test only

    failed, answered, tokenize = (
        X(kind="policy", injected="sat"),
        X(kind="policy", injected=""),
        X(kind="tokenize", injected=""),
    )
    assert call_attempts([failed, failed, answered, answered]) == (3, True)
    assert call_attempts([answered, tokenize, failed, failed]) == (2, False)  # the last call was never answered
    assert call_attempts([]) == (0, True)


def test_saturation_is_judged_against_the_baseline():
    from gymgate.load.saturation import compare, judge_saturation  # noqa: PLC0415 - this test only

    absorbed = {"returned": 8, "rollouts": 8, "error": "", "max_attempts": 2, "ended_after_window_s": 0.4}
    failed = {**absorbed, "returned": 0, "error": "RolloutError: 503", "max_attempts": 3}
    storm = {**failed, "max_attempts": 4000}
    hung = {**failed, "error": "RolloutTimeout: no rollout result within 34 s", "ended_after_window_s": 31.0}
    unearned = {**absorbed, "unearned": ["t/1"]}
    assert compare("e", "s", absorbed, absorbed, 10, 30).category == LoadCorrectness.HOLDS
    assert compare("e", "s", failed, failed, 10, 30).category == LoadCorrectness.HOLDS  # no reward: RL fails closed
    for worse in (storm, hung, unearned, failed):
        verdict = compare("e", "s", absorbed, worse, 10, 30)
        assert verdict.category == LoadCorrectness.REGRESSED, worse
    assert "4000 attempts" in compare("e", "s", failed, storm, 10, 30).why
    assert compare("e", "s", hung, hung, 10, 30).category == LoadCorrectness.SAME_FAIL
    assert compare("e", "s", hung, absorbed, 10, 30).category == LoadCorrectness.FIXED
    record = {"saturation": {"s": {BASELINE: {"envs": {"e": absorbed}}, CANDIDATE: {"error": "worker gone"}}}}
    verdicts, unjudged = judge_saturation(record)
    assert verdicts == [] and "not judged" in unjudged[0]  # a side that could not run it is never a pass


class FakeWorker:
    """A ref's load worker without Gyms (load/child.LoadChild's interface): answers every command with fixed figures;
    `dies_at` names the command it never answers (the worker is gone)."""

    log: list[tuple[str, str, object]] = []

    def __init__(self, env, args, run_id, log, cwd, dies_at=""):
        self.side = args[args.index("--ref-label") + 1]
        self.dies_at = dies_at
        self.left: list[int] = []

    def send(self, command):
        FakeWorker.log.append((self.side, command["op"], command.get("level")))
        self.pending = command

    def answer(self, timeout_s, what):
        from gymgate.load.child import WorkerGone  # noqa: PLC0415 - this test only

        command, self.pending = getattr(self, "pending", None), None
        if command is not None:
            return self.reply(command, timeout_s)
        if self.dies_at == "ready":
            raise WorkerGone("the load worker ended (status 1) before answering ready")
        return {"op": "ready", "paths": {"e": ["e:accepted"]}, "unloadable": {}, "seconds": 1.0}

    def ask(self, command, timeout_s):
        self.send(command)
        return self.answer(timeout_s, command["op"])

    def reply(self, command, timeout_s):
        from gymgate.load.child import WorkerGone  # noqa: PLC0415 - this test only

        if command["op"] == self.dies_at:
            raise WorkerGone(f"no answer to {command['op']} within {timeout_s:g} s")
        if command["op"] == "alone":
            return {"paths": ["e:accepted"], "masked": {}, "failed_alone": {}, "seconds": [0.02, 0.02]}
        if command["op"] == "usage":
            return {"usage": {"cpu_s": 1.0, "rss_bytes": 900_000_000, "fds": 500, "sockets": 9, "processes": 8}}
        if command["op"] == "saturated":
            one = {"rollouts": 8, "returned": 8, "error": "", "max_attempts": 3, "ended_after_window_s": 0.3}
            return {"saturation": command["saturation"]["name"], "envs": {"e": one}}
        level, waves = command["level"], command["waves"]
        n = level * waves
        return {
            "env": "e",
            "level": level,
            "round": command["round"],
            "waves": waves,
            "rollouts": n,
            "completed": n,
            "error": "",
            "wall_s": 0.05 * waves * max(1, level / 2),
            "latencies_s": [0.05] * n,
            "gym_cpu_s": 0.015 * n,
            "endpoint_cpu_s": 0.003 * n,
            "mismatches": [],
            "mismatched": 0,
            "after": {"cpu_s": 1.0, "rss_bytes": 900_000_000, "fds": 500, "sockets": 9, "processes": 8},
        }

    def close(self, timeout_s):
        return self.left


def fake_run(tmp_path, monkeypatch, dies_at=""):
    from types import SimpleNamespace  # noqa: PLC0415 - this test only

    from gymgate.harness.run_options import RunOptions  # noqa: PLC0415 - this test only
    from gymgate.load import interleave  # noqa: PLC0415 - this test only

    FakeWorker.log = []
    monkeypatch.setattr(
        interleave, "LoadChild", lambda *a, **k: FakeWorker(*a, dies_at=dies_at if a[1][-5] == CANDIDATE else "")
    )
    source = SimpleNamespace(to_json=lambda: {"name": "0.7.0", "digest": "sha256:x"})
    opts = RunOptions(envs=["e"], plan=({"id": "e:accepted"},))
    prepared = {BASELINE: None, CANDIDATE: None}
    return interleave.run_load({BASELINE: source, CANDIDATE: source}, prepared, ["e"], opts, tmp_path)


def test_a_load_run_interleaves_both_refs_and_keeps_everything(tmp_path, monkeypatch):
    run = fake_run(tmp_path, monkeypatch)
    assert run.verdict.code == 0, run.verdict.failing()
    rounds = [(side, level) for side, op, level in FakeWorker.log if op == "round"]
    sweep = declared.sweep()
    measured = rounds[-2 * sweep.rounds * len(run.record["envs"]["e"]["plan"]["levels"]) :]
    pairs = [measured[i : i + 2] for i in range(0, len(measured), 2)]
    assert all(
        {a[0], b[0]} == {BASELINE, CANDIDATE} and a[1] == b[1] for a, b in pairs
    )  # both refs, one level, at once
    ways = len(declared.saturated().kinds)
    assert [op for _, op, _ in FakeWorker.log][-2 * ways :] == ["saturated"] * 2 * ways  # last: each way, both sides
    for name in ("load.json", "report.md", "report.html", "e.svg"):
        assert (run.folder / name).is_file(), name


def test_a_worker_that_goes_silent_leaves_its_environment_unjudged(tmp_path, monkeypatch):
    run = fake_run(tmp_path, monkeypatch, dies_at="round")
    assert run.verdict.code == EXIT_UNJUDGED and "not judged" in run.verdict.failing()[0]
    run = fake_run(tmp_path / "again", monkeypatch, dies_at="ready")
    assert run.verdict.code == EXIT_UNJUDGED


def test_bisect_under_load_names_the_commit_that_brought_the_regression(tmp_path, monkeypatch, cache):
    """Each step a load comparison of the good ref and the commit (faked here: CPU doubles from the fourth commit
    on, the second is unsure once then clear): the search names the fourth, and a step's figure says why."""
    from types import SimpleNamespace  # noqa: PLC0415 - this test only

    from gymgate.harness import load_bisect  # noqa: PLC0415 - this test only
    from gymgate.harness.bisection import write_predicate_bisect  # noqa: PLC0415 - this test only
    from gymgate.harness.run_options import RunOptions  # noqa: PLC0415 - this test only
    from gymgate.refs.scratch import commit_all, git  # noqa: PLC0415 - this test only

    repo = tmp_path / "gym"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "nemo-gym"\nversion = "0.7.0"\n')
    (repo / "f").write_text("0")
    good = commit_all(repo, "good")
    commits = []
    for n in range(1, 7):
        (repo / "f").write_text(str(n))
        commits.append(commit_all(repo, f"change {n}"))
    tried: list[str] = []

    def fake_judge(base, source, envs, opts, acks):
        index = commits.index(source.commit)
        tried.append(source.commit)
        cpu = 30 if index >= 3 else 15
        if index == 1 and tried.count(source.commit) == 1:
            cpu = 20  # +33 %: beyond the threshold at the point, not significantly (below)
        sides = {BASELINE: side(cpu_ms=15), CANDIDATE: side(cpu_ms=cpu)}
        verdict = judge({"e": sides}, THRESHOLDS)
        if cpu == 20:
            for m in verdict.metrics:
                if m.metric == "cpu_per_rollout_ms":
                    m.category = LoadCategory.SUSPICIOUS
        return SimpleNamespace(verdict=verdict, folder=tmp_path / f"run-{index}")

    monkeypatch.setattr(load_bisect, "judge_load", fake_judge)
    result = load_bisect.load_bisect(good, commits[-1], str(repo), "e", "cpu_per_rollout_ms", RunOptions(), None)
    assert result.first_bad == commits[3] and result.last_good == commits[2]
    bad = [s for s in result.steps if s.verdict == "bad"]
    assert bad and "Gym CPU per rollout 15 → 30 ms" in bad[0].why
    assert tried.count(commits[1]) in (0, 2)  # an unsure step is measured again, never guessed
    written = write_predicate_bisect(result, tmp_path / "out", "bisect-load", "Bisect under load")
    assert "First bad commit: " + commits[3] in written[0].read_text()
    with pytest.raises(Exception, match="cpu_per_rollout_ms under load: .* is not bad"):
        load_bisect.load_bisect(good, commits[2], str(repo), "e", "cpu_per_rollout_ms", RunOptions(), None)


def test_a_changed_outcome_under_saturation_is_reviewed_by_its_name():
    from pathlib import Path as P  # noqa: PLC0415 - this test only

    from gymgate.compare.acks import LoadAck  # noqa: PLC0415 - this test only
    from gymgate.load.judge import LoadVerdict, acknowledge  # noqa: PLC0415 - this test only
    from gymgate.load.saturation import compare  # noqa: PLC0415 - this test only

    absorbed = {"returned": 8, "rollouts": 8, "error": "", "max_attempts": 5, "ended_after_window_s": 0.4}
    failed = {**absorbed, "returned": 0, "error": "RolloutError: 503", "max_attempts": 3}
    verdict = LoadVerdict(0.95, saturation=[compare("e", "policy_503_retry_after", absorbed, failed, 10, 30)])
    assert verdict.code == 1
    ack = LoadAck(P("pair.toml"), 1, "e", "policy_503_retry_after", 0.0, "0.7.0 gives up after three tries, by design")
    assert acknowledge(verdict, [ack], THRESHOLDS).code == 0
    assert "by design" in verdict.saturation[0].why


def test_an_environment_whose_paths_fail_alone_is_not_judged_under_load(tmp_path, monkeypatch):
    """The candidate's paths all fail alone (the acceptance comparison names why): nothing to load, never a pass."""
    original = FakeWorker.reply

    def failing_alone(self, command, timeout_s):
        if command["op"] == "alone" and self.side == CANDIDATE:
            return {"paths": [], "masked": {}, "failed_alone": {"e:accepted": "RolloutError: 500"}, "seconds": []}
        return original(self, command, timeout_s)

    monkeypatch.setattr(FakeWorker, "reply", failing_alone)
    run = fake_run(tmp_path, monkeypatch)
    assert run.verdict.code == EXIT_UNJUDGED and "ran to its end alone" in run.verdict.failing()[0]


def _unit_record(envs: dict[str, tuple[Side, Side]], levels=(1, 8), saturation: dict | None = None) -> dict:
    """What a load unit's node writes (load/load.json, unjudged), from each environment's two sides."""
    from dataclasses import asdict  # noqa: PLC0415 - this helper only

    record = {
        "schema": SCHEMA,
        "declared": declared.digest(),
        "latency": latency_model().to_json(),
        "levels": list(levels),
        "not_driven": [],
        "refs": {s: {"ready": {"gym": s}, "left_running": []} for s in (BASELINE, CANDIDATE)},
        "envs": {env: {BASELINE: asdict(a), CANDIDATE: asdict(b)} for env, (a, b) in envs.items()},
        "started": 10.0,
        "finished": 20.0,
    }
    if saturation is not None:
        record["saturated"], record["saturation"] = {"level": 8, "max_attempts": 10, "recover_s": 30.0}, saturation
    return record


def test_a_clusters_units_merge_into_one_record_and_what_one_lost_is_never_a_pass():
    """Each unit measured both refs on its node for its share; the caller's record holds every environment once,
    the units that ran it, and an environment whose unit brought nothing back is not judged (exit 2), never passed."""
    same = (side(cpu_ms=15), side(cpu_ms=15))
    record = new_record(
        {s: GymSource("0.7.0", KIND_PIN, "0.7.0", ">=3.12", "d", "pin") for s in (BASELINE, CANDIDATE)}, (), ()
    )
    merge_unit(record, "load-1-a", ["a"], _unit_record({"a": same}), "unit-load-1-a-a1 measured")
    merge_unit(record, "load-2-b", ["b"], _unit_record({"b": (side(cpu_ms=15), side(cpu_ms=40))}, (1, 8, 32)), "ok")
    assert sorted(record["envs"]) == ["a", "b"] and record["levels"] == [1, 8, 32]
    assert set(record["units"]) == {"load-1-a", "load-2-b"} and record["started"] <= 10.0
    verdict = judged(record)
    assert verdict.code == 1 and {m.env for m in verdict.metrics if m.category == LoadCategory.REGRESSION} == {"b"}

    merge_unit(record, "load-3-c", ["c"], None, "unit-load-3-c-a1 unjudged: lost twice: ActorDiedError")
    merge_unit(record, "load-4-d", ["d"], {**_unit_record({}), "declared": "sha256:other"}, "measured")
    merge_unit(record, "load-5-e+f", ["e", "f"], _unit_record({"e": same}), "unit-load-5 done (exit 2): stopped")
    instant = {**_unit_record({"g": same}), "latency": latency_model("instant").to_json()}
    merge_unit(record, "load-6-g", ["g"], instant, "measured")  # another latency model: not comparable here
    verdict = judged(record)
    unjudged = "\n".join(verdict.unjudged)
    assert "g: not judged under load: load unit load-6-g measured under other declarations" in unjudged
    assert "latency instant" in unjudged
    assert "c: not judged under load: load unit load-3-c brought no record back" in unjudged
    assert "lost twice" in unjudged and "d: not judged" in unjudged and "other declarations" in unjudged
    assert "f: not judged under load: load unit load-5-e+f ended before measuring it" in unjudged
    assert "e: not judged" not in unjudged

    only = new_record(
        {s: GymSource("0.7.0", KIND_PIN, "0.7.0", ">=3.12", "d", "pin") for s in (BASELINE, CANDIDATE)}, (), ()
    )
    merge_unit(only, "u", ["a"], _unit_record({"a": same}), "measured")
    assert judged(only).code == 0  # the same figures on both sides: a clean merged run is a pass


def test_saturation_merges_across_units_and_one_units_failure_is_the_whole_saturations():
    same = (side(cpu_ms=15), side(cpu_ms=15))
    answer = {"envs": {"a": {"returned": 8}}, "saturation": "s", "window_s": 1.0}
    record = new_record(
        {s: GymSource("0.7.0", KIND_PIN, "0.7.0", ">=3.12", "d", "pin") for s in (BASELINE, CANDIDATE)}, (), ()
    )
    merge_unit(
        record, "u1", ["a"], _unit_record({"a": same}, saturation={"s": {BASELINE: answer, CANDIDATE: answer}}), ""
    )
    other = {**answer, "envs": {"b": {"returned": 8}}}
    merge_unit(
        record, "u2", ["b"], _unit_record({"b": same}, saturation={"s": {BASELINE: other, CANDIDATE: other}}), ""
    )
    assert sorted(record["saturation"]["s"][BASELINE]["envs"]) == ["a", "b"]
    assert record["saturation"]["s"][BASELINE]["window_s"] == 1.0
    failed = {"s": {BASELINE: other, CANDIDATE: {"error": "WorkerGone: silent"}}}
    merge_unit(record, "u3", ["c"], _unit_record({"c": same}, saturation=failed), "")
    assert record["saturation"]["s"][CANDIDATE] == {"error": "load unit u3: WorkerGone: silent"}
    assert sorted(record["saturation"]["s"][BASELINE]["envs"]) == ["a", "b"]  # the other side's stay


def test_a_retried_call_tokenizing_again_is_the_same_observation():
    """Gym 0.2's model server tokenizes a prompt before each attempt: under a saturated server a retried call asks
    /tokenize again. A run of identical /tokenize requests counts once; failed attempts are left out; anything else
    that differs still does."""
    from types import SimpleNamespace  # noqa: PLC0415 - this test only

    from gymgate.load import observe  # noqa: PLC0415 - this test only

    def ex(kind: str, body: dict, status: int = 200, injected: str = "") -> SimpleNamespace:
        return SimpleNamespace(kind=kind, route=kind, status=status, body=body, injected=injected)

    tag, asked = "candidate/mcqa/L8/r0/g1/2", {"messages": [{"role": "user", "content": "q"}]}
    alone = observe.observation(tag, [ex("tokenize", asked), ex("policy", asked)], {"reward": 1.0})
    retried = [ex("tokenize", asked), ex("policy", asked, 429, "sat"), ex("tokenize", asked), ex("policy", asked)]
    assert observe.observation(tag, retried, {"reward": 1.0}) == alone
    other = {"messages": [{"role": "user", "content": "another"}]}
    sibling = observe.observation(tag, [*retried[:2], ex("tokenize", other), retried[3]], {"reward": 1.0})
    assert sibling != alone
    # Under a saturated server, /tokenize requests are not held against a rollout; the model's requests and the
    # result are.
    assert observe.first_differences(alone, sibling, observe.retry_leaves(alone, sibling)) == []
    changed = observe.observation(tag, [*retried[:2], ex("tokenize", other), ex("policy", other)], {"reward": 1.0})
    assert observe.first_differences(alone, changed, observe.retry_leaves(alone, changed))


@pytest.mark.parametrize("varies_alone", [True, False])
def test_a_difference_the_path_makes_alone_too_is_not_held_against_the_load(tmp_path, monkeypatch, varies_alone):
    """A verifier's time limit met by chance: loaded rollouts of a path differ from its two runs alone. The path runs
    alone again (up to sweep.toml's confirm_runs); a leaf it varies alone too leaves the findings (said in the
    report), one it never varies alone stays a regression under load."""
    original = FakeWorker.reply
    asked: list[dict] = []
    differs = {"path": "e:accepted", "rollout": "t", "fields": ["result.reward"]}
    differs["differences"] = [{"field": "result.reward", "alone": "0.0", "loaded": "1.0"}]

    def by_chance(self, command, timeout_s):
        if command["op"] == "confirm":
            asked.append(command)
            found = ["result.reward"] if varies_alone else []
            return {"paths": {"e:accepted": {"runs": 3 if varies_alone else 8, "varying": found, "error": ""}}}
        answer = original(self, command, timeout_s)
        if self.side == CANDIDATE and command["op"] == "round" and command["level"] == SECOND:
            answer = {**answer, "mismatches": [differs], "mismatched": 1}
        return answer

    monkeypatch.setattr(FakeWorker, "reply", by_chance)
    run = fake_run(tmp_path, monkeypatch)
    assert [c["fields"] for c in asked] == [{"e:accepted": ["result.reward"]}]
    assert asked[0]["runs"] == declared.sweep().confirm_runs
    correctness = run.verdict.correctness[0]
    if varies_alone:
        assert correctness.category == LoadCorrectness.HOLDS and run.verdict.code == 0
        text = (run.folder / "report.md").read_text()
        assert "candidate: e:accepted varies alone too (result.reward; 3 more runs alone)" in text
    else:
        assert correctness.category == LoadCorrectness.REGRESSED and correctness.level == SECOND
        assert "result.reward: alone 0.0 -> loaded 1.0" in correctness.detail and run.verdict.code == 1


def test_a_slow_environment_is_still_checked_under_concurrency(tmp_path, monkeypatch):
    """Every concurrent level's batch outgrows the budget here (a loaded machine, a slow environment): rounds measure
    one in flight only, and one batch at the lowest concurrent level still holds each rollout to its path alone —
    a session store that collides is caught there — without a cost sample of it."""
    from gymgate.load import interleave  # noqa: PLC0415 - this test only

    sweep = declared.sweep()
    assert sweep.check_level((1,)) == SECOND and sweep.check_level((1, SECOND)) is None
    original = FakeWorker.reply
    checks: list[tuple[str, int]] = []
    collides = {"path": "e:accepted", "rollout": "t", "fields": ["result.reward"]}
    collides["differences"] = [{"field": "result.reward", "alone": "24", "loaded": "9"}]

    def slow(self, command, timeout_s):
        if command["op"] == "confirm":
            return {"paths": {"e:accepted": {"runs": 8, "varying": [], "error": ""}}}
        answer = original(self, command, timeout_s)
        if command["op"] == "round" and command["level"] > 1:
            answer = {**answer, "wall_s": 2 * sweep.round_budget_s}  # one batch: far beyond round_budget_s
            if command["round"] == interleave.CHECK_ROUND:
                checks.append((self.side, command["level"]))
                answer = {**answer, "mismatches": [collides] if self.side == CANDIDATE else [], "mismatched": 1}
        return answer

    monkeypatch.setattr(FakeWorker, "reply", slow)
    run = fake_run(tmp_path, monkeypatch)
    plan = run.record["envs"]["e"]["plan"]
    assert plan["levels"] == [1] and plan["check_level"] == SECOND
    assert sorted(checks) == [(BASELINE, SECOND), (CANDIDATE, SECOND)]
    correctness = run.verdict.correctness[0]
    assert correctness.category == LoadCorrectness.REGRESSED and correctness.level == SECOND, correctness
    assert {m.level for m in run.verdict.metrics if m.level is not None} == {1}  # its cost is never judged
    assert f"checked with one batch of {SECOND} in flight" in (run.folder / "report.md").read_text()


def test_a_leaf_a_path_varies_alone_on_either_ref_is_its_own_on_both(tmp_path, monkeypatch):
    """An A/A run: a recorded path's verifier meets its time limit by chance under load on both refs; alone again, only
    the candidate shows it varying (the baseline's eight runs by chance do not). The leaf is the path's own
    nondeterminism on both refs: neither holds it against the load (no 'fixed', no 'regressed')."""
    original = FakeWorker.reply
    differs = {"path": "e:accepted", "rollout": "t", "fields": ["result.reward"]}
    differs["differences"] = [{"field": "result.reward", "alone": "1.0", "loaded": "0.0"}]

    def by_chance(self, command, timeout_s):
        if command["op"] == "confirm":
            found = ["result.reward"] if self.side == CANDIDATE else []
            return {"paths": {"e:accepted": {"runs": 8, "varying": found, "error": ""}}}
        answer = original(self, command, timeout_s)
        if command["op"] == "round" and command["level"] == SECOND and command["round"] == 0:
            answer = {**answer, "mismatches": [differs], "mismatched": 1}
        return answer

    monkeypatch.setattr(FakeWorker, "reply", by_chance)
    run = fake_run(tmp_path, monkeypatch)
    assert [c.category for c in run.verdict.correctness] == [LoadCorrectness.HOLDS], run.verdict.correctness
    assert run.verdict.code == 0


@pytest.mark.parametrize("noisy", [False, True])
def test_a_soak_reads_memory_until_the_target_leak_is_visible_within_its_budget(tmp_path, monkeypatch, noisy):
    """Quiet readings: the soak runs at the level that did the most rollouts a second until the run could see a leak
    of the target, then stops; its rounds are measured rounds, both refs at once. Readings as noisy as an
    allocator's steps: the readings so far say the target is out of the budget's reach, so no soak runs, and the
    record says how many rollouts it would take; the verdict's memory figure says what this run could see."""
    sweep = replace(declared.sweep(), soak_budget_s=60.0)
    monkeypatch.setattr(declared, "sweep", lambda: sweep)
    original = FakeWorker.reply

    def readings(self, command, timeout_s):
        answer = original(self, command, timeout_s)
        if command["op"] == "round":
            scale = 256 * 2**20 if noisy else 3 * 2**19  # an allocator stepping by megabytes; a quiet one
            step = int(random.Random(command["round"]).random() * scale)
            answer["after"] = {**answer["after"], "anon_bytes": 600_000_000 + step}
        return answer

    monkeypatch.setattr(FakeWorker, "reply", readings)
    run = fake_run(tmp_path, monkeypatch)
    soak = run.record["envs"]["e"]["plan"]["soak"]
    throughput = Side.from_json(run.record["envs"]["e"][BASELINE]).throughput_curve()
    assert soak["level"] == max(throughput, key=throughput.get)
    memory = next(m for m in run.verdict.metrics if m.metric == "rss_slope_kb")
    if noisy:
        assert soak["rounds"] == 0 and soak["sees_kb"] > sweep.soak_target_kb and "more rollouts" in soak["why"]
    else:
        assert soak["rounds"] >= 1 and soak["sees_kb"] <= sweep.soak_target_kb and "why" not in soak
        rounds = [(s, lv) for s, op, lv in FakeWorker.log if op == "round"]
        assert rounds.count((BASELINE, soak["level"])) == rounds.count((CANDIDATE, soak["level"]))
    assert f"sees a leak from {soak['sees_kb']:.3g}" in memory.why
    assert run.verdict.code == 0, run.verdict.failing()


def test_the_soak_drives_the_level_that_did_the_most_rollouts_a_second_and_none_without_one():
    sweep = replace(declared.sweep(), soak_budget_s=40.0)
    assert sweep.soak_level({1: 2.0, 16: 11.5, 128: 9.0}) == 16
    assert sweep.soak_level({1: 0.0, 16: 0.0}) is None and sweep.soak_level({}) is None
    assert replace(sweep, soak_budget_s=0.0).soak_level({1: 2.0}) is None
