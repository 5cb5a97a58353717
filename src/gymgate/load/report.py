"""A load verdict as people read it: the failing figures first, then per environment the curves (throughput and p95
latency against rollouts in flight, baseline and candidate on one plot: an SVG beside the report), the cost per
level, the memory slope, what the load left, and the endpoint's share of the CPU (it must never be the bottleneck)."""

from __future__ import annotations

from statistics import median
from typing import Any

from gymgate.errors import EXIT_FAILED
from gymgate.load.judge import LoadVerdict
from gymgate.load.measures import BASELINE, CANDIDATE, SIDES, Side, sides_of
from gymgate.verdict import LoadCategory, LoadCorrectness

COLOURS = {BASELINE: "#4575b4", CANDIDATE: "#d73027"}


def verdict_lines(verdict: LoadVerdict) -> list[str]:
    """The load verdict in a few lines (the terminal's and the report's head): what fails the gate, then what both
    refs do under load (not the bump's doing, but RL meets it) and what is near a threshold."""
    failing = verdict.failing()
    if not failing:
        head = "load: no regression under load"
    elif verdict.code == EXIT_FAILED:
        head = "load: REGRESSED under load"
    else:
        head = "load: NOT JUDGED under load"
    both = [c for c in verdict.correctness if c.category == LoadCorrectness.SAME_FAIL]
    near = [m for m in verdict.metrics if m.category == LoadCategory.SUSPICIOUS]
    accepted = [m for m in verdict.metrics if m.category == LoadCategory.ACKNOWLEDGED]
    return [
        head,
        *(f"  {line}" for line in failing),
        *(f"  acknowledged: {m.figure(verdict.confidence)} ({m.ack})" for m in accepted),
        *(f"  on both refs: {c.figure()}" for c in both),
        *(f"  suspicious (not significant): {m.figure(verdict.confidence)}" for m in near),
        *(f"  stale acknowledgement (matched no load regression): {ref}" for ref in verdict.stale_acks),
    ]


def load_markdown(record: dict[str, Any], verdict: LoadVerdict) -> str:
    refs = record["refs"]
    name = lambda side: refs[side]["source"].get("name", side)  # noqa: E731
    out = [
        f"# Under load: {name(BASELINE)} → {name(CANDIDATE)}",
        "",
        *verdict_lines(verdict),
        "",
        f"Levels in flight: {', '.join(map(str, record['levels']))} (GRPO groups of {record['group']})"
        + (f"; not driven on this machine: {record['not_driven']}" if record.get("not_driven") else ""),
        f"Thresholds: gymgate/load/thresholds.toml ({record['declared'][:19]}); confidence "
        f"{round(verdict.confidence * 100)} %.",
        "",
    ]
    for env in record["envs"]:
        sides = sides_of(record, env)
        out += [f"## {env}", ""]
        plan = record["envs"][env].get("plan")
        if plan:
            skipped = "; ".join(f"{k}: {v}" for k, v in plan["not_driven"].items())
            out += [
                f"A rollout alone takes {plan['alone_s'] * 1000:.0f} ms here: driven at {plan['levels']}"
                + (f"; not at {skipped}" if skipped else ""),
                "",
            ]
        for c in verdict.correctness:
            if c.env == env:
                mark = "❌ " if c.category == LoadCorrectness.REGRESSED else ""
                out += [f"{mark}{c.figure()}", ""]
        out += _table(env, sides, verdict)
        out += ["", f"![{env} under load]({env}.svg)", ""]
    return "\n".join(out) + "\n"


def _table(env: str, sides: dict[str, Side], verdict: LoadVerdict) -> list[str]:
    rows = [
        "| in flight | throughput (rollouts/s) | p95 latency (ms) | Gym CPU per rollout (ms) | verdict |",
        "|---:|---|---|---|---|",
    ]
    levels = sorted({lv for s in sides.values() for lv in s.levels()})
    for level in levels:
        cells = []
        for metric in ("throughput", "p95_latency_ms", "cpu_per_rollout_ms"):
            values = [sides[s].samples(metric, level) if s in sides else [] for s in SIDES]
            cells.append(" → ".join(f"{median(v):.3g}" if v else "–" for v in values))
        found = [
            m for m in verdict.metrics if m.env == env and m.level == level and m.category != LoadCategory.NO_CHANGE
        ]
        rows.append(
            f"| {level} | {' | '.join(cells)} | {'; '.join(f'{m.title}: {m.category}' for m in found) or 'no change'} |"
        )
    rows.append("")
    for m in verdict.metrics:
        if m.env == env and m.level is None:
            rows.append(f"- {m.figure(verdict.confidence)} ({m.category})")
    for side in SIDES:
        if side not in sides:
            continue
        share, top = sides[side].endpoint_share(), sides[side].saturation()
        share_text = f"{share * 100:.1f} %" if share is not None else "–"
        stops = f"throughput stops growing at {top} in flight" if top else "throughput still grows at the highest level"
        rows.append(f"- {side}: endpoint's share of the CPU {share_text}; {stops}")
    return rows


def curves_svg(env: str, sides: dict[str, Side], width: int = 560, height: int = 260) -> str:
    """Throughput (solid) and p95 latency (dashed, right axis) against rollouts in flight, both refs on one plot."""
    levels = sorted({lv for s in sides.values() for lv in s.levels()})
    if not levels:
        return ""
    pad = 44
    series = {}
    for side, s in sides.items():
        series[side] = {
            m: {lv: median(v) for lv in levels if (v := s.samples(m, lv))} for m in ("throughput", "p95_latency_ms")
        }
    top_t = max((v for d in series.values() for v in d["throughput"].values()), default=1) or 1
    top_l = max((v for d in series.values() for v in d["p95_latency_ms"].values()), default=1) or 1

    def x(level: int) -> float:
        return pad + (width - 2 * pad) * (levels.index(level) / max(1, len(levels) - 1))

    def y(value: float, top: float) -> float:
        return height - pad - (height - 2 * pad) * value / (top * 1.1)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<text x="{pad}" y="16">{env}: throughput (solid, rollouts/s, max {top_t:.3g}) and p95 latency '
        f"(dashed, ms, max {top_l:.0f}) by rollouts in flight</text>",
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>',
    ]
    for level in levels:
        parts.append(f'<text x="{x(level):.0f}" y="{height - pad + 14}" text-anchor="middle">{level}</text>')
    for side, data in series.items():
        for metric, top, dash in (("throughput", top_t, ""), ("p95_latency_ms", top_l, ' stroke-dasharray="5,4"')):
            points = " ".join(f"{x(lv):.1f},{y(v, top):.1f}" for lv, v in sorted(data[metric].items()))
            if points:
                parts.append(
                    f'<polyline fill="none" stroke="{COLOURS[side]}" stroke-width="2"{dash} points="{points}"/>'
                )
        parts.append(
            f'<text x="{width - pad}" y="{30 + 14 * SIDES.index(side)}" text-anchor="end" fill="{COLOURS[side]}">'
            f"{side}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
