"""Benches of Gym's own tests across releases (gymgate.gymtests): every consecutive pair of pins, each release's tests
over the other's code, the default set's servers and Gym's core; and one bump with every runnable environment."""

from __future__ import annotations

import itertools
import tempfile
import time
from collections import Counter
from pathlib import Path

from gymgate.cases.environments import all_environments, environment_sets
from gymgate.compare.acks import Reviews
from gymgate.envs.prepare import prepare_env
from gymgate.gymtests.bump import judge_gym_tests
from gymgate.gymtests.judge import Side, TestCategory
from gymgate.harness.environments import every_runnable
from gymgate.refs import resolve_ref

GATING = (TestCategory.NEWLY_FAILING, TestCategory.INTERFACE)


def _pair(baseline: str, candidate: str, envs, scope: str, wide: bool) -> dict:
    a, b = resolve_ref(baseline), resolve_ref(candidate)
    prepared = {a.name: prepare_env(a, wide), b.name: prepare_env(b, wide)}
    folder = Path(tempfile.mkdtemp(prefix="gg-bench-gymtests-"))
    started = time.monotonic()
    run = judge_gym_tests(a, b, envs, scope, prepared, folder, "auto", Reviews(), reuse=False)
    seconds = time.monotonic() - started
    counts = Counter(f"{v.of}:{v.category}" for v in run.verdicts)
    excluded: dict[str, Counter] = {}
    for v in run.verdicts:
        if v.category in (TestCategory.EXCLUDED, TestCategory.CANNOT_RUN, TestCategory.SAME_FAIL):
            reason = v.why.split(":", 1)[0] if v.category != TestCategory.CANNOT_RUN else v.why[:60]
            excluded.setdefault(v.label, Counter())[f"{v.of} {v.category}: {reason}"] += 1
    gating = [
        {
            "test": v.test,
            "label": v.label,
            "category": str(v.category),
            "why": v.why[:300],
            "vanished": v.vanished,
            "ack": v.ack,
        }
        for v in run.verdicts
        if v.of == Side.BASELINE and v.category in GATING
    ]
    fixed = [v.test for v in run.verdicts if v.of == Side.CANDIDATE and v.category == TestCategory.FIXED]
    return {
        "exit_code": run.code,
        "wall_s": round(seconds, 1),
        "folder": str(folder),
        "folders": len({v.label for v in run.verdicts}),
        "counts": dict(sorted(counts.items())),
        "excluded": {k: dict(c) for k, c in sorted(excluded.items())},
        "gating": gating,
        "fixed": fixed,
        "why_not": run.why_not,
    }


def bench_gym_tests(pins: list[str]) -> dict:
    """Each consecutive pair of `pins`: both releases' tests of the default set's servers and Gym's core (`all`)."""
    envs = [e for e in all_environments() if e.name in environment_sets()["default"]]
    return {"pairs": {f"{a} -> {b}": _pair(a, b, envs, "all", False) for a, b in itertools.pairwise(pins)}}


def bench_gym_tests_every(pin: str, baseline: str) -> dict:
    """One bump with every runnable environment's servers (`--env-set all`, scope `envs`)."""
    cased = all_environments()
    envs = cased + every_runnable([resolve_ref(baseline), resolve_ref(pin)], {e.name for e in cased})
    return {"pair": f"{baseline} -> {pin}", "envs": len(envs), **_pair(baseline, pin, envs, "envs", True)}


def _n(counts: dict, side: str, category: TestCategory) -> int:
    return counts.get(f"{side}:{category}", 0)


def _row(name: str, data: dict) -> str:
    c = data["counts"]
    ran = sum(v for k, v in c.items() if k.startswith("baseline:"))
    judged = sum(_n(c, "baseline", k) for k in (TestCategory.PASS_BOTH, *GATING))
    out = sum(_n(c, "baseline", k) for k in (TestCategory.EXCLUDED, TestCategory.SAME_FAIL, TestCategory.CANNOT_RUN))
    reviewed = sum(1 for g in data["gating"] if g["ack"])
    return (
        f"| {name} | {ran} | {judged} | {out} | {_n(c, 'baseline', TestCategory.NEWLY_FAILING)} | "
        f"{_n(c, 'baseline', TestCategory.INTERFACE)} | {reviewed} | {_n(c, 'candidate', TestCategory.FIXED)} | "
        f"{data['exit_code']} | {data['wall_s']} s |"
    )


HEADER = [
    "| bump | tests of the baseline | judged | excluded | newly failing | cannot import | reviewed | fixed | exit | "
    "time |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def _details(data: dict) -> list[str]:
    """What stays red (each test named), what was reviewed (counted: acks/ has each reason), what was excluded."""
    lines = []
    reviewed = [g for g in data["gating"] if g["ack"]]
    if reviewed:
        lines.append(f"  - {len(reviewed)} reviewed (acks/: what Gym changed, test by test)")
    for g in data["gating"]:
        if not g["ack"]:
            lines.append(
                f"  - **not reviewed**, {g['category']}: `{g['test']}` ({g['label']}): {g['vanished'] or g['why']}"
            )
    for label, reasons in data["excluded"].items():
        lines.append(f"  - excluded in {label}: " + "; ".join(f"{n} × {r}" for r, n in reasons.items()))
    return lines


def render_gym_tests(data: dict, command: str) -> str:
    figures = data["gym-tests"]
    lines = ["<!-- gym-tests:every:begin -->", "### Gym's own tests across every release", ""]
    lines += [
        f"Command: `{command}` — each release's tests over the other's code, both directions, the default "
        "set's servers, their agents, the model server and Gym's core (`--gym-tests all`), nothing cached.",
        "",
    ]
    lines += HEADER + [_row(name, pair) for name, pair in figures["pairs"].items()] + [""]
    for name, pair in figures["pairs"].items():
        lines += [f"- **{name}**", *_details(pair)]
    return "\n".join([*lines, "", "<!-- gym-tests:every:end -->"])


def render_gym_tests_every(pin: str, baseline: str, data: dict, command: str) -> str:
    data = data["gym_tests_every"]
    tag = f"gym-tests:{baseline}-to-{pin}-all"
    lines = [f"<!-- {tag}:begin -->", f"### Gym's own tests, every runnable environment: {data['pair']}", ""]
    lines += [
        f"Command: `{command}` — {data['envs']} environments' servers (`--env-set all --gym-tests envs`), "
        f"{data['folders']} test folders.",
        "",
    ]
    lines += HEADER + [_row(data["pair"], data), "", *_details(data)]
    return "\n".join([*lines, "", f"<!-- {tag}:end -->"])
