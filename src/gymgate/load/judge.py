"""A load run judged: per environment, what concurrency did to its rollouts on each ref (gymgate.verdict.
LoadCorrectness), and each cost metric's change from baseline to candidate against its reviewed threshold
(thresholds.toml), as a category (gymgate.verdict.LoadCategory) with the figure that says why:
"mcqa: Gym CPU per rollout 41 ms → 63 ms, +54 % (95 %: +48…+60) at 32 in flight"."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

from gymgate.compare.acks import LoadAck
from gymgate.load.declared import UP, Threshold, Thresholds
from gymgate.load.measures import BASELINE, CANDIDATE, GROWTH, PER_LEVEL, Growth, Side
from gymgate.load.saturation import SaturationVerdict
from gymgate.load.stats import ratio_interval, z_of
from gymgate.verdict import LoadCategory, LoadCorrectness, load_exit_code

SERIAL = 0.25  # a speed-up below this share of the rise in rollouts in flight: the work goes (nearly) one at a time
NAMED = ("loop_lag_ms", "speedup", "rss_slope_kb")  # figures that say where (the server held, the level it serialized
# at) or what the run could see (the smallest leak)


@dataclass
class MetricVerdict:
    env: str
    metric: str
    title: str
    unit: str
    category: str
    level: int | None = None  # in flight, for a metric judged per level
    baseline: float | None = None
    candidate: float | None = None
    change: float | None = None  # a ratio (relative metrics) or a difference (absolute ones)
    low: float | None = None
    high: float | None = None
    samples: tuple[int, int] = (0, 0)
    why: str = ""
    ack: str = ""  # the reviewed entry that accepts it ("acks/<file> load N: reason"), when acknowledged

    def figure(self, confidence: float) -> str:
        where = f" at {self.level} in flight" if self.level is not None else ""
        if self.category == LoadCategory.INSUFFICIENT:
            return f"{self.env}: {self.title}{where}: insufficient data ({self.why})"
        b, c = _num(self.baseline), _num(self.candidate)
        span = f"{round(confidence * 100)} %"
        if self.change is None:
            return f"{self.env}: {self.title}{where} {b} → {c} {self.unit}"
        if self.low is not None and self.high is not None and _relative(self.metric):
            pct = lambda r: f"{(r - 1) * 100:+.0f}"  # noqa: E731
            change = f"{pct(self.change)} % ({span}: {pct(self.low)}…{pct(self.high)})"
        elif self.low is not None and self.high is not None and math.isfinite(self.low):
            change = f"{self.change:+.1f} ({span}: {self.low:+.1f}…{self.high:+.1f})"
        else:
            change = f"{self.change:+.1f}"
        named = f" ({self.why})" if self.metric in NAMED and self.why else ""
        return f"{self.env}: {self.title} {b} → {c} {self.unit}, {change}{where}{named}"


@dataclass
class CorrectnessVerdict:
    env: str
    category: str
    level: int | None = None  # where the candidate first lost, failed or changed a rollout
    detail: str = ""
    baseline_level: int | None = None
    baseline_detail: str = ""

    def figure(self) -> str:
        if self.category == LoadCorrectness.HOLDS:
            return f"{self.env}: every rollout equals its path alone at every level"
        at = f" at {self.level} in flight" if self.level is not None else ""
        if self.category == LoadCorrectness.FIXED:
            return f"{self.env}: fixed under load (the baseline failed at {self.baseline_level} in flight)"
        return f"{self.env}: {self.category}{at}: {self.detail}"


@dataclass
class LoadVerdict:
    confidence: float
    metrics: list[MetricVerdict] = field(default_factory=list)
    correctness: list[CorrectnessVerdict] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)  # environments with nothing to judge, and why
    # environments not compared because a ref's Gym does not have them: in neither, or new in the candidate (shown;
    # one the candidate removed is unjudged here, and regressed by the acceptance comparison)
    not_compared: list[str] = field(default_factory=list)
    stale_acks: list[str] = field(default_factory=list)  # reviewed `[[load]]` entries of this pair that matched nothing
    saturation: list[SaturationVerdict] = field(default_factory=list)  # the policy server saturated (saturation.py)

    @property
    def categories(self) -> list[str]:
        found = [m.category for m in self.metrics] + [c.category for c in [*self.correctness, *self.saturation]]
        return found + ([LoadCategory.INSUFFICIENT] if self.unjudged else [])

    @property
    def code(self) -> int:
        return load_exit_code(self.categories)

    def failing(self) -> list[str]:
        """Every finding that fails the gate, correctness first; a metric found at several levels once, with the
        figure of the lowest level and the others named."""
        lines = [c.figure() for c in [*self.correctness, *self.saturation] if c.category == LoadCorrectness.REGRESSED]
        for category in (LoadCategory.REGRESSION, LoadCategory.INSUFFICIENT):
            found: dict[tuple[str, str], list[MetricVerdict]] = {}
            for m in self.metrics:
                if m.category == category:
                    found.setdefault((m.env, m.metric), []).append(m)
            for group in found.values():
                also = [str(m.level) for m in group[1:] if m.level is not None]
                lines.append(group[0].figure(self.confidence) + (f" (also at {', '.join(also)})" if also else ""))
        return lines + self.unjudged

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "confidence": self.confidence,
            "metrics": [asdict(m) for m in self.metrics],
            "correctness": [asdict(c) for c in self.correctness],
            "unjudged": self.unjudged,
            "not_compared": self.not_compared,
            "stale_acks": self.stale_acks,
            "saturation": [s.to_json() for s in self.saturation],
        }


def _relative(metric: str) -> bool:
    return metric in PER_LEVEL or metric == "speedup"


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def judge(envs: dict[str, dict[str, Side]], thresholds: Thresholds, ramp_rounds: int = 0) -> LoadVerdict:
    """`ramp_rounds`: the measured rounds memory growth is not fitted over (sweep.toml)."""
    verdict = LoadVerdict(thresholds.confidence)
    for env, sides in sorted(envs.items()):
        base, cand = sides.get(BASELINE), sides.get(CANDIDATE)
        if base is not None and cand is not None and base.absent and (cand.absent or not cand.error):
            why = "in neither ref" if cand.absent else "new in the candidate, nothing to compare it with"
            verdict.not_compared.append(f"{env}: not compared under load: {why} ({base.absent})")
            continue
        if base is None or cand is None or base.error or cand.error or not base.rounds or not cand.rounds:
            why = "; ".join(s.error for s in (base, cand) if s is not None and s.error) or "no rounds ran"
            verdict.unjudged.append(f"{env}: not judged under load: {why}")
            continue
        verdict.correctness.append(correctness(env, base, cand))
        probed = any(r.get("loop_lag") for r in [*base.rounds, *cand.rounds])
        lost = min((lv for lv in (base.first_lost(), cand.first_lost()) if lv is not None), default=None)
        for level in sorted(set(base.levels()) | set(cand.levels())):
            if lost is not None and level >= lost:  # a side lost rollouts there (and stopped): correctness says so
                continue
            for metric in PER_LEVEL:
                if metric == "loop_lag_ms" and not probed:  # a run that did not probe (probe_s 0, older records)
                    continue
                verdict.metrics.append(per_level(env, metric, level, base, cand, thresholds))
        for metric in GROWTH:
            if metric == "heap_slope_kb" and memory_metric(base, cand, ramp_rounds) != metric:
                continue  # a Gym whose servers did not answer (not forked by the launcher): resident memory alone
            verdict.metrics.append(growth(env, metric, base, cand, thresholds, ramp_rounds))
        verdict.metrics.append(children_left(env, base, cand, thresholds))
        found = scaling(env, base, cand, thresholds)
        if found is not None:
            verdict.metrics.append(found)
    return verdict


def correctness(env: str, base: Side, cand: Side) -> CorrectnessVerdict:
    b, c = base.first_failing(), cand.first_failing()
    if c is None:
        category = LoadCorrectness.FIXED if b is not None else LoadCorrectness.HOLDS
    elif b is None or c[0] < b[0]:
        category = LoadCorrectness.REGRESSED
    else:
        category = LoadCorrectness.SAME_FAIL
    return CorrectnessVerdict(
        env,
        category,
        level=c[0] if c else None,
        detail=c[1] if c else "",
        baseline_level=b[0] if b else None,
        baseline_detail=b[1] if b else "",
    )


def per_level(env: str, metric: str, level: int, base: Side, cand: Side, thresholds: Thresholds) -> MetricVerdict:
    t = thresholds.of(metric)
    a, b = base.samples(metric, level), cand.samples(metric, level)
    out = MetricVerdict(env, metric, t.title, t.unit, LoadCategory.INSUFFICIENT, level=level, samples=(len(a), len(b)))
    if min(len(a), len(b)) < thresholds.min_rounds:
        out.why = f"{len(a)} baseline and {len(b)} candidate rounds ran to their end; {thresholds.min_rounds} needed"
        return out
    out.baseline, out.candidate = median(a), median(b)
    out.change, out.low, out.high = ratio_interval(a, b, thresholds.confidence, thresholds.resamples)
    moved = abs(out.candidate - out.baseline) >= t.floor
    out.category = categorize(t, out.change, out.low, out.high, moved, relative=True)
    if metric == "loop_lag_ms":
        out.why = f"the most-held loop: {cand.lag_server(level) or '?'} (baseline's: {base.lag_server(level) or '?'})"
    return out


def scaling(env: str, base: Side, cand: Side, thresholds: Thresholds) -> MetricVerdict | None:
    """How much more Gym does with more rollouts in flight: each side's speed-up from its lowest level to the highest
    both drove (round by round), the candidate's median against the baseline's with a bootstrap interval. A candidate
    that stops scaling where the baseline goes on regresses; `why` names the level where each stops growing
    ("serialized at N in flight"). None when the sides share fewer than two levels (nothing to scale over)."""
    t = thresholds.of("speedup")
    enough = lambda side, level: len(side.samples("throughput", level)) >= thresholds.min_rounds  # noqa: E731
    shared = sorted(lv for lv in set(base.levels()) & set(cand.levels()) if enough(base, lv) and enough(cand, lv))
    if len(shared) < 2:
        return None
    top = shared[-1]
    a, b = base.speedups(top), cand.speedups(top)
    out = MetricVerdict(env, t.name, t.title, t.unit, LoadCategory.INSUFFICIENT, samples=(len(a), len(b)))
    if min(len(a), len(b)) < thresholds.min_rounds:
        out.why = (
            f"{len(a)} baseline and {len(b)} candidate rounds reached {top} in flight; {thresholds.min_rounds} needed"
        )
        return out
    out.baseline, out.candidate = median(a), median(b)
    out.change, out.low, out.high = ratio_interval(a, b, thresholds.confidence, thresholds.resamples)
    moved = abs(out.candidate - out.baseline) >= t.floor
    out.category = categorize(t, out.change, out.low, out.high, moved, relative=True)
    out.why = f"{top} in flight do the work of {out.candidate:.1f} at once, the baseline's of {out.baseline:.1f}"
    if out.candidate < SERIAL * top / shared[0]:
        knee = cand.saturation()
        out.why += f"; serialized at {knee if knee else shared[0]} in flight"
    return out


def categorize(t: Threshold, point: float, low: float, high: float, moved: bool, relative: bool) -> LoadCategory:
    """Worse than the threshold across the whole interval: regression; at the point only: suspicious; better than
    the mirrored threshold across the whole interval: improved. A change smaller than the metric's floor in its own
    unit (`moved` false) is no change, however significant."""
    if not moved:
        return LoadCategory.NO_CHANGE
    if relative:
        bad, good = t.ratio, 1 / t.ratio
    else:
        bad, good = (t.floor, -t.floor) if t.worse == UP else (-t.floor, t.floor)
    if t.worse == UP:
        if low > bad:
            return LoadCategory.REGRESSION
        if point > bad:
            return LoadCategory.SUSPICIOUS
        if high < good:
            return LoadCategory.IMPROVED
    else:
        if high < bad:
            return LoadCategory.REGRESSION
        if point < bad:
            return LoadCategory.SUSPICIOUS
        if low > good:
            return LoadCategory.IMPROVED
    return LoadCategory.NO_CHANGE


def growth(
    env: str, metric: str, base: Side, cand: Side, thresholds: Thresholds, ramp_rounds: int = 0
) -> MetricVerdict:
    """A leak is a slope: the candidate's growth beyond the baseline's, with the interval its standard errors give,
    counted only when the candidate grew by more than the Gym's allocator steps here (`needed`). `why` says from
    what slope this run could see a leak."""
    t = thresholds.of(metric)
    a, b = base.growth(metric, ramp_rounds), cand.growth(metric, ramp_rounds)
    out = MetricVerdict(env, t.name, t.title, t.unit, LoadCategory.INSUFFICIENT, samples=(a.readings, b.readings))
    if min(a.readings, b.readings) < thresholds.min_rounds:
        out.why = f"{a.readings} baseline and {b.readings} candidate readings; {thresholds.min_rounds} needed"
        return out
    # the candidate's growth beyond the baseline's (a baseline that gave memory back is taken as flat: its allocator
    # returning pages is not the candidate's leak)
    out.baseline, out.candidate, out.change = a.slope, b.slope, b.slope - max(a.slope, 0.0)
    visible, spread, span, needed = _visible(t, thresholds, a, b)
    out.low, out.high = out.change - spread, out.change + spread
    out.why = (
        f"this run sees a leak from {visible:.3g} {t.unit} at {round(thresholds.confidence * 100)} % ({span} rollouts)"
    )
    # moved: beyond the floor, and the candidate itself grew by what the allocator's steps here could not explain
    moved = abs(out.change) >= t.floor and span > 0 and abs(out.change) * span / t.per >= needed
    if out.change > 0:
        moved = moved and b.slope * span / t.per >= needed
    out.category = categorize(t, out.change, out.low, out.high, moved, relative=False)
    return out


def _needed(t: Threshold, a: Growth, b: Growth) -> float:
    """What the candidate must grow by in all (the unit × `per`) for its slope to count: `min_growth`, and
    `step_factor` times the allocator's largest step here — the baseline's largest rise between two readings, and
    the candidate's beyond its own slope (a steady leak rises every round: that is the trend, not noise; a one-off
    step, fitted as a slope, grows at most 1.5 times itself over the span and rises beyond it by at least half)."""
    return max(t.min_growth, t.step_factor * max(a.step, b.step_beyond))


def _visible(t: Threshold, thresholds: Thresholds, a: Growth, b: Growth) -> tuple[float, float, int, float]:
    """The smallest growth a run could call a leak at its confidence — its interval (the two slopes' standard
    errors) wholly beyond the floor, and adding up to what is needed over the rollouts measured — that interval's
    half-width, the rollouts both sides' readings span, and the growth needed in all."""
    spread = z_of(thresholds.confidence) * math.hypot(a.se, b.se)
    span = min(a.span, b.span)
    needed = _needed(t, a, b)
    return (max(t.floor + spread, needed * t.per / span) if span else math.inf), spread, span, needed


def memory_metric(base: Side, cand: Side, ramp_rounds: int = 0) -> str:
    """The finest memory reading both sides took: the servers' heaps where both read them, else resident memory."""
    return "heap_slope_kb" if base.reads_heap(ramp_rounds) and cand.reads_heap(ramp_rounds) else "rss_slope_kb"


def visible_growth(
    metric: str, base: Side, cand: Side, thresholds: Thresholds, ramp_rounds: int = 0, target: float | None = None
) -> tuple[float, float]:
    """The smallest growth (the metric's unit) the readings so far could call a leak, and how many more rollouts
    would bring it down to `target` (0 when it is there; inf when no number would): what a soak decides on
    (interleave.py). Projected as for readings spread evenly over the rollouts: the slopes' standard error falls
    as the span's power 1.5, the growth needed's share as the span. (inf, inf) with too few readings."""
    a, b = base.growth(metric, ramp_rounds), cand.growth(metric, ramp_rounds)
    if min(a.readings, b.readings) < thresholds.min_rounds:
        return math.inf, math.inf
    t = thresholds.of(metric)
    visible, spread, span, needed = _visible(t, thresholds, a, b)
    if target is None or visible <= target:
        return visible, 0.0
    if target <= t.floor or not span or math.isinf(spread) or not spread:
        return visible, math.inf
    more = max(needed * t.per / target, span * (spread / (target - t.floor)) ** (2 / 3))
    return visible, max(0.0, more - span)


def children_left(env: str, base: Side, cand: Side, thresholds: Thresholds) -> MetricVerdict:
    """Processes left after the load: a count, read once per ref (no interval: a count beyond the baseline's by more
    than the floor is a regression)."""
    t = thresholds.of("children_left")
    a, b = base.children_left(), cand.children_left()
    out = MetricVerdict(
        env, t.name, t.title, t.unit, LoadCategory.INSUFFICIENT, samples=(int(a is not None), int(b is not None))
    )
    if a is None or b is None:
        out.why = "no reading after the load"
        return out
    out.baseline, out.candidate, out.change = a, b, b - a
    out.category = categorize(t, out.change, out.change, out.change, abs(out.change) >= t.floor, relative=False)
    return out


def acknowledge(verdict: LoadVerdict, acks: list[LoadAck], thresholds: Thresholds) -> LoadVerdict:
    """Each regression a reviewed `[[load]]` entry of this ref pair accepts becomes acknowledged (shown, not failed):
    same environment and metric, and the interval's worst end within the entry's `up_to`; a saturation whose outcome
    changed (saturation.py), by an entry naming it as its metric (`up_to` unused: the outcome is reviewed whole). An entry without a reason
    accepts nothing; one that matched no regression is stale (said, like a stale contract acknowledgement)."""
    for m in verdict.metrics:
        if m.category != LoadCategory.REGRESSION:
            continue
        worst = m.high if thresholds.of(m.metric).worse == UP else m.low
        for ack in acks:
            if (ack.env, ack.metric) != (m.env, m.metric) or worst is None:
                continue
            ack.used = True
            within = worst <= ack.up_to if thresholds.of(m.metric).worse == UP else worst >= ack.up_to
            if ack.reason and within:
                m.category, m.ack = LoadCategory.ACKNOWLEDGED, f"{ack.ref}: {ack.reason}"
                break
    for found in verdict.saturation:  # a changed outcome under saturation is reviewed by the saturation's name
        if found.category != LoadCorrectness.REGRESSED:
            continue
        for ack in acks:
            if (ack.env, ack.metric) == (found.env, found.saturation):
                ack.used = True
                if ack.reason:
                    found.category, found.why = LoadCategory.ACKNOWLEDGED, f"{found.why} ({ack.ref}: {ack.reason})"
                    break
    verdict.stale_acks = [a.ref for a in acks if not a.used]
    return verdict
