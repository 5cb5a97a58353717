"""The load run's declarations, read once: the sweep (sweep.toml) and the thresholds (thresholds.toml)."""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gymgate.endpoint.faults import Saturation
from gymgate.endpoint.latency import MODELS_FILE as LATENCY_FILE

SWEEP_FILE = Path(__file__).with_name("sweep.toml")
THRESHOLDS_FILE = Path(__file__).with_name("thresholds.toml")
UP, DOWN = "up", "down"
ESTIMATE_SLACK = 1.0  # a level whose batch the paths alone say would outgrow the budget by more is not warmed up


@dataclass(frozen=True)
class Sweep:
    group: int
    levels: tuple[int, ...]
    cap_per_core: int
    round_budget_s: float
    rounds: int
    ramp_rounds: int
    min_rollouts: int
    warmup: int
    extra_rounds: int
    round_per_rollout_s: float
    round_min_s: float
    round_slack: float
    start_s: float
    stop_s: float
    confirm_runs: int = 8  # runs alone again of a path whose loaded rollouts differed (its own nondeterminism?)
    envs_per_unit: int = 1  # on a Ray cluster: the environments one load unit (both refs on one node) measures
    probe_s: float = 0.1  # how often each Gym server's event loop is probed during a round (load/loopprobe.py)
    soak_target_kb: float = 32.0  # the per-rollout leak a soak runs until the readings could see (sweep.toml [soak])
    soak_budget_s: float = 0.0  # the most a soak adds to one environment (0: no soak)

    def cap(self, cores: int | None = None) -> int:
        """The most rollouts in flight this machine is asked to drive."""
        return self.cap_per_core * (cores or os.cpu_count() or 1)

    def share(self, sides: int = 1, cores: int | None = None) -> int:
        """The cores each of `sides` refs measured at once has on this machine."""
        return max(1, (cores or os.cpu_count() or 1) // max(1, sides))

    def driven(self, cores: int | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(the levels this machine drives, the declared ones above its cap)."""
        cap = self.cap(cores)
        return tuple(x for x in self.levels if x <= cap), tuple(x for x in self.levels if x > cap)

    def batch_s(
        self, level: int, alone_s: float, cores: int | None = None, wait_s: float = 0.0, cpu_s: float | None = None
    ) -> float:
        """What one batch of `level` rollouts is expected to take, each taking `alone_s` alone (`cpu_s` of it the Gym's
        CPU, all of it when not known) on the machine's cores and waiting `wait_s` on the model (Little's law: the
        wait overlaps the others' work; the CPU does not)."""
        cpu = alone_s if cpu_s is None else cpu_s
        return max(wait_s + alone_s, cpu * level / (cores or os.cpu_count() or 1))

    def calibrated(self, walls: dict[int, float]) -> tuple[tuple[int, ...], dict[int, int], dict[int, str]]:
        """From the warm-up's last pass (each level's batch time here, the slower side's): the levels a round drives
        (the first always; a later one while its batch fits round_budget_s), the batches a round runs at each
        (enough for min_rollouts, as many as fit the budget), and why each other level is not driven."""
        levels, waves, why = [], {}, {}
        for level, wall in sorted(walls.items()):
            if levels and wall > self.round_budget_s:
                why[level] = f"one batch took {wall:.1f} s here (round_budget_s {self.round_budget_s:g})"
                continue
            levels.append(level)
            fit = int(self.round_budget_s // wall) if wall > 0 else self.min_rollouts
            waves[level] = max(1, min(-(-self.min_rollouts // level), fit))
        return tuple(levels), waves, why

    def levels_for(
        self, alone_s: float, cores: int | None = None, wait_s: float = 0.0, sides: int = 1, cpu_s: float | None = None
    ) -> tuple[tuple[int, ...], dict[int, str]]:
        """The levels an environment is worth warming up at here (`wait_s`: what a rollout waits on the model;
        `sides`: refs measured at once, sharing the cores), and why each other declared level is not. A first guess
        from the paths alone (within ESTIMATE_SLACK times the budget): the warm-up measures the rest (`calibrated`)."""
        driven, why = [], {}
        cores = cores or os.cpu_count() or 1
        cap = self.cap(cores)
        for level in self.levels:
            batch = self.batch_s(level, alone_s, self.share(sides, cores), wait_s, cpu_s)
            if level > cap:
                why[level] = f"above {self.cap_per_core} a core ({cap} here)"
            elif batch > self.round_budget_s * ESTIMATE_SLACK and driven:
                why[level] = f"one batch would take ~{batch:.0f} s here (round_budget_s {self.round_budget_s:g})"
            else:
                driven.append(level)
        return tuple(driven), why

    def check_level(self, levels: tuple[int, ...], cores: int | None = None) -> int | None:
        """When none of the levels a round drives here has two rollouts in flight (each batch too slow for the
        budget), the lowest declared level that has: one batch of it still checks correctness under concurrency
        (never its cost). None when a driven level is concurrent already."""
        if any(level > 1 for level in levels):
            return None
        return next((x for x in self.levels if 1 < x <= self.cap(cores)), None)

    def soak_level(self, throughputs: dict[int, float]) -> int | None:
        """The level a soak drives: the one whose rounds did the most rollouts a second (the cheapest rollouts: the
        most readings of memory in the budget). None with nothing measured or no soak declared."""
        if self.soak_budget_s <= 0 or not throughputs:
            return None
        level = max(sorted(throughputs), key=lambda level: throughputs[level])
        return level if throughputs[level] > 0 else None  # no rollout a second anywhere: nothing to soak with

    def round_deadline(self, level: int, expected_s: float | None = None) -> float:
        """One batch's deadline (a round's is this times its waves): `round_slack` times what a batch at this level
        is expected to take here (the baseline's warm-up, or the estimate before it), at least `round_min_s`; with
        nothing expected, `round_per_rollout_s` a rollout in flight. A candidate that serializes where the baseline
        does not meets it instead of holding the run for minutes: its lost rollouts fail correctness there."""
        if expected_s is not None:
            return max(self.round_min_s, self.round_slack * expected_s)
        return max(self.round_min_s, self.round_per_rollout_s * level)


@dataclass(frozen=True)
class Saturated:
    """How saturation is driven and judged (sweep.toml [saturated]), and the ways it comes."""

    level: int
    max_attempts: int
    recover_s: float
    kinds: tuple[Saturation, ...]


@dataclass(frozen=True)
class Threshold:
    name: str
    title: str
    unit: str
    worse: str
    floor: float
    ratio: float = 1.0
    absolute: bool = False
    per: float = 1.0  # rollouts the unit counts per (a slope per 100 rollouts: 100)
    min_growth: float = 0.0  # a slope's: what the candidate itself must grow by over the run (the unit × `per`)
    step_factor: float = 0.0  # and by this many times the allocator's largest step in the run (judge._needed)

    def hurts(self, change: float) -> bool:
        """Whether a change (a ratio, or a difference for an absolute metric) goes the way that hurts."""
        neutral = 0.0 if self.absolute else 1.0
        return change > neutral if self.worse == UP else change < neutral


@dataclass(frozen=True)
class Thresholds:
    confidence: float
    resamples: int
    min_rounds: int
    metrics: tuple[Threshold, ...]

    def of(self, name: str) -> Threshold:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"no threshold is declared for load metric {name!r} ({THRESHOLDS_FILE})")


@cache
def sweep(path: Path = SWEEP_FILE) -> Sweep:
    data = tomllib.loads(path.read_text())
    levels = tuple(int(x) for x in data["sweep"]["levels"])
    if not levels or list(levels) != sorted(set(levels)) or levels[0] < 1:
        raise ValueError(f"{path}: sweep.levels must be increasing positive numbers, got {list(levels)}")
    return Sweep(
        group=int(data["shape"]["group"]),
        levels=levels,
        cap_per_core=int(data["sweep"]["cap_per_core"]),
        round_budget_s=float(data["sweep"]["round_budget_s"]),
        rounds=int(data["sweep"]["rounds"]),
        ramp_rounds=int(data["sweep"]["ramp_rounds"]),
        min_rollouts=int(data["sweep"]["min_rollouts"]),
        warmup=int(data["sweep"]["warmup"]),
        extra_rounds=int(data["sweep"]["extra_rounds"]),
        confirm_runs=int(data["sweep"]["confirm_runs"]),
        probe_s=float(data["sweep"]["probe_s"]),
        envs_per_unit=max(1, int(data["cluster"]["envs_per_unit"])),
        soak_target_kb=float(data.get("soak", {}).get("target_kb", 32.0)),
        soak_budget_s=float(data.get("soak", {}).get("budget_s", 0.0)),
        **{k: float(v) for k, v in data["deadlines"].items()},
    )


@cache
def thresholds(path: Path = THRESHOLDS_FILE) -> Thresholds:
    data = tomllib.loads(path.read_text())
    metrics = []
    for name, entry in data["metric"].items():
        if entry["worse"] not in (UP, DOWN):
            raise ValueError(f"{path}: metric {name}: worse must be {UP!r} or {DOWN!r}")
        metrics.append(Threshold(name=name, **entry))
    return Thresholds(float(data["confidence"]), int(data["resamples"]), int(data["min_rounds"]), tuple(metrics))


@cache
def saturated(path: Path = SWEEP_FILE) -> Saturated:
    data = tomllib.loads(path.read_text())
    given = data.get("saturated", {})
    kinds = tuple(
        Saturation(**{**entry, "callers": tuple(entry.get("callers", ("policy",)))})
        for entry in data.get("saturation", [])
    )
    for kind in kinds:
        if bool(kind.kind) == bool(kind.delay_s):
            raise ValueError(f"{path}: saturation {kind.name}: give either kind (an error status) or delay_s")
    return Saturated(
        int(given.get("level", 8)), int(given.get("max_attempts", 10)), float(given.get("recover_s", 30)), kinds
    )


def digest() -> str:
    """The declarations' bytes: what a load verdict was measured and judged by."""
    files = b"\0".join(f.read_bytes() for f in (SWEEP_FILE, THRESHOLDS_FILE, LATENCY_FILE))
    return "sha256:" + hashlib.sha256(files).hexdigest()
