"""The load run's record (load.json) read as measurements: each ref's samples of each metric, per level, and the
readings the leak metrics come from. One place knows the record's shape; the judge and the report read it here."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

from gymgate.load.stats import percentile, pooled_slope

BASELINE, CANDIDATE = "baseline", "candidate"
SIDES = (BASELINE, CANDIDATE)
SCHEMA = 1
# sampled once a round, judged per level
PER_LEVEL = ("cpu_per_rollout_ms", "p95_latency_ms", "throughput", "loop_lag_ms")
PER_RUN = ("rss_slope_kb", "heap_slope_kb", "fd_slope", "children_left", "speedup")  # one value per ref and env
GROWTH = ("rss_slope_kb", "heap_slope_kb", "fd_slope")  # fitted over the rounds' readings (Side.growth)
LAG_PERCENTILE = 90.0  # a round's event-loop lag of one server: this percentile of its probes' answer times


def complete(round_: dict[str, Any]) -> bool:
    """A round whose every rollout came back (its cost is comparable with another's)."""
    return not round_.get("error") and round_.get("rollouts", 0) > 0 and round_.get("completed") == round_["rollouts"]


def server_lags(round_: dict[str, Any]) -> dict[str, float]:
    """Each probed server's event-loop lag in a round (ms; load/loopprobe.py): LAG_PERCENTILE of its probes. A
    server no probe reached within the round counts as its probe's bound."""
    out = {}
    for server, probes in (round_.get("loop_lag") or {}).items():
        times = list(probes.get("ms") or [])
        if probes.get("failed"):
            times += [10_000.0] * int(probes["failed"])
        if times:
            out[server] = percentile(sorted(times), LAG_PERCENTILE)
    return out


def sample(metric: str, round_: dict[str, Any]) -> float | None:
    """A round's value of a per-level metric; None when the round did not measure it (a round not probed)."""
    if metric == "loop_lag_ms":
        lags = server_lags(round_)
        return max(lags.values()) if lags else None
    if metric == "cpu_per_rollout_ms":
        return round_["gym_cpu_s"] / round_["rollouts"] * 1000
    if metric.endswith("_latency_ms") and metric[0] == "p":  # p50, p95, p99: shown; p95 is judged
        return percentile(round_["latencies_s"], float(metric[1:].split("_")[0])) * 1000
    if metric == "throughput":
        return round_["rollouts"] / round_["wall_s"] if round_["wall_s"] > 0 else 0.0
    raise KeyError(metric)


@dataclass(frozen=True)
class Growth:
    """A side's growth of memory or descriptors over the measured rounds (Side.growth)."""

    slope: float  # the metric's unit (KiB a rollout; descriptors a hundred rollouts)
    se: float  # its standard error
    readings: int
    span: int  # the rollouts the readings span
    step: float  # the largest rise between consecutive readings of a level, in totals (KiB; descriptors)
    step_beyond: float  # the largest rise beyond what the slope explains (a steady leak's rises are not noise)


@dataclass
class Side:
    """One ref's record of one environment."""

    rounds: list[dict[str, Any]] = field(default_factory=list)
    warm: dict[str, Any] = field(default_factory=dict)  # its servers' usage after the warm-up
    settled: dict[str, Any] = field(default_factory=dict)  # and after the load, once idle
    alone: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # why it has no (or not all its) rounds
    absent: str = ""  # the environment is not in this ref's Gym (why): nothing to load, on this side
    # paths whose loaded rollouts differed, run alone again (load/interleave._confirm): runs, leaves varying alone
    alone_again: dict[str, Any] = field(default_factory=dict)
    # one batch at the lowest concurrent level when no measured level was concurrent (load/interleave._check):
    # correctness only, never a cost sample
    check: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Side:
        known = ("rounds", "warm", "settled", "alone", "error", "absent", "alone_again", "check")
        return cls(**{k: data[k] for k in known if k in data})

    def levels(self) -> list[int]:
        return sorted({r["level"] for r in self.rounds})

    def samples(self, metric: str, level: int) -> list[float]:
        values = (sample(metric, r) for r in self.rounds if r["level"] == level and complete(r))
        return [v for v in values if v is not None]

    def lag_server(self, level: int) -> str:
        """The server whose event loop lagged most at this level (its median over the rounds)."""
        by_server: dict[str, list[float]] = {}
        for r in self.rounds:
            if r["level"] == level and complete(r):
                for server, lag in server_lags(r).items():
                    by_server.setdefault(server, []).append(lag)
        return max(by_server, key=lambda s: median(by_server[s]), default="")

    def speedups(self, top: int) -> list[float]:
        """Per measured round: throughput at `top` in flight over throughput at the lowest level the side drove in
        that round (how much more Gym does with more in flight: 1 when it serializes)."""
        low = min(self.levels(), default=None)
        by_round: dict[int, dict[int, float]] = {}
        for r in self.rounds:
            if complete(r):
                by_round.setdefault(r["round"], {})[r["level"]] = sample("throughput", r) or 0.0
        return [at[top] / at[low] for at in by_round.values() if low is not None and top in at and at.get(low, 0) > 0]

    def cpu_per_rollout_ms(self) -> float | None:
        """Gym CPU per rollout over every complete round (the ratio a round's model wait is set against)."""
        done = [r for r in self.rounds if complete(r)]
        rollouts = sum(r["rollouts"] for r in done)
        return sum(r["gym_cpu_s"] for r in done) / rollouts * 1000 if rollouts else None

    def wait_per_rollout_ms(self) -> float | None:
        """What a loaded rollout waited on the model (the latency model's waits, its calls together), median."""
        waits = [r["model_wait_s"] / r["rollouts"] * 1000 for r in self.rounds if "model_wait_s" in r and complete(r)]
        return median(waits) if waits else None

    def growth(self, metric: str, ramp_rounds: int = 0) -> Growth:
        """How fast the servers' memory (`rss_slope_kb`: KiB a rollout) or open descriptors (`fd_slope`: a hundred
        rollouts) grew over the measured rounds after the first `ramp_rounds`: the least-squares slope of each
        round's reading against the rollouts done so far, fitted within each level (its own intercept: a step
        between levels is pools grown for more in flight, not a leak), and what its noise looks like."""
        key, factor, total = {
            "rss_slope_kb": (self.memory_key(), 1 / 1024, 1 / 1024),
            "heap_slope_kb": ("heap_bytes", 1 / 1024, 1 / 1024),
            "fd_slope": ("fds", 100.0, 1),
        }[metric]
        by_level: dict[int, tuple[list[float], list[float]]] = {}
        done = 0
        for r in self.rounds:
            done += r["rollouts"]
            if key not in r.get("after", {}) or r["round"] < ramp_rounds:
                continue
            xs, ys = by_level.setdefault(r["level"], ([], []))
            xs.append(done)
            ys.append(r["after"][key])
        b, se = pooled_slope(list(by_level.values()))
        readings = sum(len(xs) for xs, _ in by_level.values())
        spans = sum(xs[-1] - xs[0] for xs, _ in by_level.values() if xs)
        # the largest rise between two consecutive readings of a level, as read and beyond the fitted slope: how far
        # the Gym's allocator steps up here (memory given back is never read as a leak: a fall sets no bar)
        pairs = [
            pair
            for xs, ys in by_level.values()
            for pair in zip(xs, xs[1:], ys, ys[1:], strict=False)  # consecutive
        ]
        rises = [y2 - y1 for _, _, y1, y2 in pairs]
        beyond = [(y2 - y1) - b * (x2 - x1) for x1, x2, y1, y2 in pairs]
        return Growth(b * factor, se * factor, readings, spans, max([0.0, *rises]) * total, max([0.0, *beyond]) * total)

    def reads_heap(self, ramp_rounds: int = 0) -> bool:
        """Whether every measured round read the servers' heaps (services/launcher/heapprobe.py), the same servers
        each time: only then is the heap's growth a slope."""
        readings = [r["after"] for r in self.rounds if "after" in r and r["round"] >= ramp_rounds]
        return (
            bool(readings)
            and all("heap_bytes" in a for a in readings)
            and len({a.get("heap_servers") for a in readings}) == 1
        )

    def memory_key(self) -> str:
        """The reading memory growth is fitted on: anonymous resident memory (what a leak grows; file pages come and
        go with the page cache), or all resident memory for a record from before it was read."""
        readings = [r["after"] for r in self.rounds if "after" in r]
        return "anon_bytes" if readings and all("anon_bytes" in a for a in readings) else "rss_bytes"

    def children_left(self) -> float | None:
        """Processes of the Gym's servers once the load is over and they are idle, beyond those after the warm-up."""
        if "processes" not in self.warm or "processes" not in self.settled:
            return None
        return float(self.settled["processes"] - self.warm["processes"])

    def first_lost(self) -> int | None:
        """The lowest level at which a round failed or lost a rollout (the side stops there: what follows is not
        comparable), or None."""
        return min((r["level"] for r in self.rounds if r.get("error") or r["completed"] != r["rollouts"]), default=None)

    def first_failing(self) -> tuple[int, str] | None:
        """The lowest level at which a rollout was lost, failed or differed from its path alone, and how."""
        checked = [self.check] if self.check else []
        for r in sorted([*self.rounds, *checked], key=lambda r: (r["level"], r["round"])):
            if r.get("error"):
                return r["level"], f"the round failed: {r['error'].splitlines()[0]}"
            if r["completed"] != r["rollouts"]:
                return r["level"], f"{r['rollouts'] - r['completed']} of {r['rollouts']} rollouts lost"
            if r.get("mismatches"):
                m = r["mismatches"][0]
                d = m["differences"][0]
                return (
                    r["level"],
                    f"{len(r['mismatches'])} rollout(s) differ from their path alone; first {m['path']}: "
                    f"{d['field']}: alone {d['alone']} -> loaded {d['loaded']}",
                )
        return None

    def endpoint_share(self) -> float | None:
        gym = sum(r.get("gym_cpu_s", 0.0) for r in self.rounds)
        endpoint = sum(r.get("endpoint_cpu_s", 0.0) for r in self.rounds)
        return endpoint / (gym + endpoint) if gym + endpoint > 0 else None

    def throughput_curve(self) -> dict[int, float]:
        return {lv: median(s) for lv in self.levels() if (s := self.samples("throughput", lv))}

    def saturation(self) -> int | None:
        """The level where throughput stops growing (the next level gains under 10 %), or None when it still grows
        at the highest level run."""
        curve = sorted(self.throughput_curve().items())
        for (level, value), (_, following) in zip(curve, curve[1:], strict=False):
            if following < 1.1 * value:
                return level
        return None


def sides_of(record: dict[str, Any], env: str) -> dict[str, Side]:
    """Each side's record of one environment of a load run (load.json)."""
    entry = record["envs"].get(env, {})
    return {side: Side.from_json(entry[side]) for side in SIDES if side in entry}
