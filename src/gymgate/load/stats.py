"""The statistics a load verdict rests on: medians, percentiles, a bootstrap interval of the ratio of two medians, and
a least-squares slope with its standard error. Deterministic (a seeded generator): the same samples give the same
verdict."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def ratio_interval(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float, resamples: int, seed: int = 0
) -> tuple[float, float, float]:
    """(median(candidate) / median(baseline), and the percentile-bootstrap interval of that ratio at `confidence`):
    each side resampled with replacement on its own."""
    base, cand = statistics.median(baseline), statistics.median(candidate)
    point = cand / base if base else math.inf
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        b = statistics.median(rng.choices(baseline, k=len(baseline)))
        c = statistics.median(rng.choices(candidate, k=len(candidate)))
        ratios.append(c / b if b else math.inf)
    tail = (1 - confidence) / 2 * 100
    return point, percentile(ratios, tail), percentile(ratios, 100 - tail)


def slope(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The least-squares slope of ys over xs and its standard error (inf with fewer than three points)."""
    n = len(xs)
    if n < 2:
        return 0.0, math.inf
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, math.inf
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    if n < 3:
        return b, math.inf
    residual = sum((y - (my + b * (x - mx))) ** 2 for x, y in zip(xs, ys, strict=True))
    return b, math.sqrt(residual / (n - 2) / sxx)


def pooled_slope(groups: Sequence[tuple[Sequence[float], Sequence[float]]]) -> tuple[float, float]:
    """One least-squares slope shared by several groups of (xs, ys), each with an intercept of its own (each group
    centred on its means), and its standard error: a step between groups (pools and caches grown for a higher level
    in flight) is not read as a trend. inf with too few points to estimate it."""
    sxx = sxy = 0.0
    centred: list[tuple[float, float]] = []
    for xs, ys in groups:
        if len(xs) < 2:
            continue
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        centred += [(x - mx, y - my) for x, y in zip(xs, ys, strict=True)]
    sxx = sum(x * x for x, _ in centred)
    sxy = sum(x * y for x, y in centred)
    if sxx == 0:
        return 0.0, math.inf
    b = sxy / sxx
    used = sum(1 for xs, _ in groups if len(xs) >= 2)
    freedom = len(centred) - used - 1
    if freedom < 1:
        return b, math.inf
    residual = sum((y - b * x) ** 2 for x, y in centred)
    return b, math.sqrt(residual / freedom / sxx)


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of a confidence (1.96 for 0.95)."""
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
