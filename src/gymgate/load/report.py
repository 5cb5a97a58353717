"""A load verdict as people read it: the failing figures first, then per environment the curves (throughput and p95
latency against rollouts in flight, baseline and candidate on one plot: an SVG beside the report), the cost per
level, the memory slope, what the load left, and the endpoint's share of the CPU (it must never be the bottleneck)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from gymgate.errors import EXIT_FAILED
from gymgate.load.judge import LoadVerdict
from gymgate.load.measures import BASELINE, CANDIDATE, SIDES, Side, sides_of
from gymgate.report.html import banner, templates
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
    both = [c for c in [*verdict.correctness, *verdict.saturation] if c.category == LoadCorrectness.SAME_FAIL]
    near = [m for m in verdict.metrics if m.category == LoadCategory.SUSPICIOUS]
    accepted = [m for m in verdict.metrics if m.category == LoadCategory.ACKNOWLEDGED]
    return [
        head,
        *(f"  {line}" for line in failing),
        *(f"  acknowledged: {m.figure(verdict.confidence)} ({m.ack})" for m in accepted),
        *(f"  on both refs: {c.figure()}" for c in both),
        *(f"  suspicious (not significant): {m.figure(verdict.confidence)}" for m in near),
        *(f"  stale acknowledgement (matched no load regression): {ref}" for ref in verdict.stale_acks),
        *(f"  {line}" for line in verdict.not_compared),
    ]


# The per-level columns and their headings, both refs side by side (p50 and p99 shown, p95 judged).
TABLE = {
    "throughput": "throughput (rollouts/s)",
    "p50_latency_ms": "p50 latency (ms)",
    "p95_latency_ms": "p95 latency (ms)",
    "p99_latency_ms": "p99 latency (ms)",
    "cpu_per_rollout_ms": "Gym CPU per rollout (ms)",
    "loop_lag_ms": "event-loop lag, p90 (ms)",
}


@dataclass
class EnvView:
    """One environment's part of the report, as both renderers show it."""

    name: str
    plan: str  # which levels ran here, and why not the others
    correctness: str
    failing: bool
    rows: list[dict[str, str]]  # per level: each TABLE metric "baseline → candidate", and the verdict
    notes: list[str]  # the slopes and counts, each side's endpoint share and where throughput stops growing


def env_view(record: dict[str, Any], env: str, verdict: LoadVerdict) -> EnvView:
    sides = sides_of(record, env)
    plan = record["envs"][env].get("plan")
    plan_text = ""
    if plan:
        skipped = "; ".join(f"{k}: {v}" for k, v in plan["not_driven"].items())
        plan_text = f"A rollout alone takes {plan['alone_s'] * 1000:.0f} ms here: driven at {plan['levels']}" + (
            f"; not at {skipped}" if skipped else ""
        )
        if plan.get("check_level"):
            plan_text += (
                f"; correctness under concurrency checked with one batch of {plan['check_level']} in flight "
                "(its cost not judged)"
            )
        soak = plan.get("soak")
        if soak:
            plan_text += (
                f"; memory soaked over {soak['rounds']} more rounds at {soak['level']} in flight ({soak['seconds']:.0f} s)"
                + (f", stopped: {soak['why']}" if soak.get("why") else "")
            )
    found = [c for c in verdict.correctness if c.env == env]
    rows = []
    for level in sorted({lv for s in sides.values() for lv in s.levels()}):
        row = {"level": str(level)}
        for metric in TABLE:
            values = [sides[s].samples(metric, level) if s in sides else [] for s in SIDES]
            row[metric] = " → ".join(f"{median(v):.3g}" if v else "–" for v in values)
        moved = [
            m for m in verdict.metrics if m.env == env and m.level == level and m.category != LoadCategory.NO_CHANGE
        ]
        row["verdict"] = "; ".join(f"{m.title}: {m.category}" for m in moved) or "no change"
        rows.append(row)
    notes = [
        f"{m.figure(verdict.confidence)} ({m.category})" for m in verdict.metrics if m.env == env and m.level is None
    ]
    for side in SIDES:
        if side in sides:
            share, top = sides[side].endpoint_share(), sides[side].saturation()
            share_text = f"{share * 100:.1f} %" if share is not None else "–"
            stops = (
                f"throughput stops growing at {top} in flight" if top else "throughput still grows at the highest level"
            )
            held = sides[side].settled.get("rss_bytes")
            memory = f"; its Gym instance's servers hold {held / 2**30:.2f} GiB after the load" if held else ""
            notes.append(f"{side}: endpoint's share of the CPU {share_text}; {stops}{memory}")
            wait, cpu = sides[side].wait_per_rollout_ms(), sides[side].cpu_per_rollout_ms()
            if wait:
                ratio = f", {wait / cpu:.0f} × the Gym CPU it cost ({cpu:.1f} ms)" if cpu else ""
                notes.append(f"{side}: a loaded rollout waited {wait:.0f} ms on the model{ratio}")
            for pid, again in sorted(sides[side].alone_again.items()):
                if again.get("varying"):
                    names = ", ".join(again["varying"][:4]) + (" …" if len(again["varying"]) > 4 else "")
                    notes.append(
                        f"{side}: {pid} varies alone too ({names}; {again['runs']} more runs alone): "
                        "not held against the load"
                    )
            servers = server_memory(sides[side])
            if servers:
                notes.append(f"{side}: each server's memory, after the warm-up → after the load: {servers}")
    failing = any(
        c.category == LoadCorrectness.REGRESSED for c in [*found, *verdict.saturation] if c.env == env
    ) or any(
        m.env == env and m.category in (LoadCategory.REGRESSION, LoadCategory.INSUFFICIENT) for m in verdict.metrics
    )
    return EnvView(env, plan_text, "; ".join(c.figure() for c in found), failing, rows, notes)


def server_memory(side: Side) -> str:
    """Each server's resident memory (its tree) after the warm-up and once idle after the load, in MiB."""
    warm, settled = side.warm.get("servers_rss", {}), side.settled.get("servers_rss", {})
    mib = lambda b: f"{b / 2**20:.0f}" if b is not None else "–"  # noqa: E731
    return ", ".join(
        f"{name} {mib(warm.get(name))} → {mib(settled.get(name))} MiB" for name in sorted({*warm, *settled})
    )


def model_line(record: dict[str, Any]) -> str:
    """Which latency model the endpoint answered with (gymgate/endpoint/latency.toml), and where its figures are from."""
    model = record.get("latency")
    if not model:
        return "Model latency: none (every answer at once)"
    if model["scale"] * (model["ttft_ms"] + model["tpot_ms"]) <= 0:
        return f"Model latency: {model['name']} ({model['title']})"
    return (
        f"Model latency: {model['name']} — {model['title']}; time to first token {model['ttft_ms']:.0f} ms "
        f"(p99 {model['ttft_p99_ms']:.0f}), {model['tpot_ms']:.1f} ms a further token (p99 {model['tpot_p99_ms']:.1f}), "
        f"× {model['scale']:g}; source: {model['source']}"
    )


def _names(record: dict[str, Any]) -> tuple[str, str]:
    return tuple(record["refs"][side]["source"].get("name", side) for side in SIDES)  # type: ignore[return-value]


def load_markdown(record: dict[str, Any], verdict: LoadVerdict) -> str:
    baseline, candidate = _names(record)
    out = [
        f"# Under load: {baseline} → {candidate}",
        "",
        *verdict_lines(verdict),
        "",
        f"Levels in flight: {', '.join(map(str, record['levels']))} (GRPO groups of {record['group']})"
        + (f"; not driven on this machine: {record['not_driven']}" if record.get("not_driven") else ""),
        model_line(record),
        f"Thresholds: gymgate/load/thresholds.toml ({record['declared'][:19]}); confidence "
        f"{round(verdict.confidence * 100)} %. The same as a page: report.html.",
        "",
    ]
    for env in record["envs"]:
        view = env_view(record, env, verdict)
        out += [f"## {env}", ""]
        if view.plan:
            out += [view.plan, ""]
        if view.correctness:
            out += [("❌ " if view.failing else "") + view.correctness, ""]
        out += [
            f"| in flight | {' | '.join(TABLE.values())} | verdict |",
            "|---:|" + "---|" * (len(TABLE) + 1),
            *(f"| {r['level']} | {' | '.join(r[m] for m in TABLE)} | {r['verdict']} |" for r in view.rows),
            "",
            *(f"- {line}" for line in view.notes),
            "",
            f"![{env} under load]({env}.svg)",
            "",
        ]
    return "\n".join(out) + "\n"


def load_html(record: dict[str, Any], verdict: LoadVerdict) -> str:
    """report.html of a load run: one self-contained page, the curves inline (the comparison's page style)."""
    from markupsafe import Markup  # noqa: PLC0415 - loaded with jinja2, by the page only

    baseline, candidate = _names(record)
    envs = []
    for env in record["envs"]:
        view = env_view(record, env, verdict)
        tone = "bad" if view.failing else "good"
        envs.append({**view.__dict__, "tone": tone, "svg": Markup(curves_svg(env, sides_of(record, env)))})
    return (
        templates()
        .get_template("load.html.j2")
        .render(
            **banner(verdict.code),
            lines=verdict_lines(verdict),
            baseline=baseline,
            candidate=candidate,
            levels=", ".join(map(str, record["levels"])),
            group=record["group"],
            envs=envs,
            columns=TABLE,
            declared=record["declared"][:19],
            model=model_line(record),
        )
    )


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
