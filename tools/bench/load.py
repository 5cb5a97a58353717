"""Benches of load runs (issue 54): A/A bumps under load — the same ref on both sides, repeated — for the false
alarms they raise (the gate's promise: none), the noise floor each metric shows, what a load run costs in time and
memory; and the load mutants (tests/integration/load_mutants.toml), each with its findings and time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import tomllib
from pathlib import Path

from gymgate.load.measures import PER_LEVEL
from gymgate.verdict import LoadCorrectness

from .common import REPO, gymgate, median, sample_peak, timed

MUTANTS = REPO / "tests" / "integration" / "load_mutants.toml"
RELATIVE = (*PER_LEVEL, "speedup")  # metrics judged as a ratio of medians (the rest: a difference)


def _newest_load(runs: str) -> dict:
    """The newest load run's record (load.json, its verdict in it) in a runs folder."""
    newest = max(Path(runs).glob("*-load-*/load/load.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(newest.read_text())


def bench_load(pin: str, repeats: int) -> dict:
    """`accept --gym-ref PIN --baseline PIN --load` `repeats` times in one runs folder (the acceptance runs are served
    from the cache after the first): each an A/A bump under load."""
    runs = tempfile.mkdtemp(prefix="gg-bench-load-")
    env = dict(os.environ, GYMGATE_RUNS=runs)
    out: dict = {"runs": []}
    for _ in range(repeats):
        done, peak = threading.Event(), [0, 0]
        sampler = threading.Thread(target=sample_peak, args=(runs, done, peak), daemon=True)
        sampler.start()
        seconds, text, code = timed(gymgate("accept", "--gym-ref", pin, "--baseline", pin, "--load"), env)
        done.set()
        sampler.join()
        assert code in (0, 1), text[-3000:]
        record = _newest_load(runs)
        load = record["verdict"]
        noise: dict[str, float] = {}
        for m in load["metrics"]:
            if m["change"] is None:
                continue
            spread = abs(m["change"] - 1) if m["metric"] in RELATIVE else abs(m["change"])
            noise[m["metric"]] = max(noise.get(m["metric"], 0.0), round(spread, 4))
        out["runs"].append(
            {
                "exit": code,
                "load_code": load["code"],
                "seconds": round(seconds, 1),
                "load_s": round(record["finished"] - record["started"], 1),
                "peak_pss_gib": round(peak[1] / 2**30, 2),
                "regressions": [m for m in load["metrics"] if m["category"] in ("regression", "insufficient data")],
                "suspicious": sum(1 for m in load["metrics"] if m["category"] == "suspicious"),
                "correctness": [c for c in load["correctness"] if c["category"] == LoadCorrectness.REGRESSED],
                "on_both": [c for c in load["correctness"] if c["category"] == LoadCorrectness.SAME_FAIL],
                "unjudged": load["unjudged"],
                "largest_change": noise,
                "envs": sorted(record["envs"]),
            }
        )
    subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_load(pin: str, data: dict, command: str) -> str:
    runs = data["load"]["runs"]
    alarms = sum(1 for r in runs if r["regressions"] or r["correctness"] or r["unjudged"] or r["load_code"])
    both = sum(1 for r in runs if r.get("on_both"))
    metrics = sorted({k for r in runs for k in r["largest_change"]})
    lines = [
        f"<!-- load:{pin}:begin -->",
        f"### A/A bumps under load: {pin} against itself",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. {len(runs)} bumps, each the default set "
        f"({', '.join(runs[0]['envs']) if runs else ''}).",
        "",
        f"- **False alarms: {alarms} of {len(runs)}** bumps named a load regression, a correctness finding or "
        f"unjudged data (exit codes {sorted({r['exit'] for r in runs})}); suspicious (shown, not failed) in "
        f"{sum(1 for r in runs if r['suspicious'])}; a difference under load on both refs (shown, not failed: "
        f"a path's own nondeterminism it did not show in its runs alone) in {both}.",
        f"- Load run (both refs, start to stop): median {median([r['load_s'] for r in runs])} s "
        f"({', '.join(str(r['load_s']) for r in runs)}); the whole command {median([r['seconds'] for r in runs])} s; "
        f"peak PSS of everything the run started {max((r['peak_pss_gib'] for r in runs), default=0)} GiB.",
        "",
        "Noise floor: the largest change any environment and level showed in each bump (a ratio's distance from 1, a "
        "slope's or count's difference), by metric:",
        "",
        "| metric | median | largest | each bump |",
        "|---|---|---|---|",
    ]
    for metric in metrics:
        values = [r["largest_change"].get(metric, 0.0) for r in runs]
        lines.append(f"| {metric} | {median(values)} | {max(values)} | {', '.join(str(v) for v in values)} |")
    return "\n".join([*lines, f"<!-- load:{pin}:end -->"])


def bench_load_mutants(pin: str, repeats: int) -> dict:
    """Each load mutant once (tests/integration/load_mutants.toml), as its test runs it: exit, findings, time."""
    from tests.integration.test_load_mutants import MUTANTS as BY_NAME  # noqa: PLC0415 - the suite's own builder
    from tests.integration.test_load_mutants import build  # noqa: PLC0415 - the suite's own builder

    suite = tomllib.loads(MUTANTS.read_text())
    out: dict = {"mutants": []}
    for name, mutant in BY_NAME.items():
        root = Path(tempfile.mkdtemp(prefix="gg-bench-mut-"))
        runs = tempfile.mkdtemp(prefix="gg-bench-load-")
        gym = build(mutant, root / "gym")
        command = ["accept", "--gym-ref", str(gym), "--baseline", suite["version"], "--load"]
        command += [a for e in mutant["envs"] for a in ("--env", e)] + mutant.get("args", suite["args"])
        env = dict(os.environ, GYMGATE_RUNS=runs, GYMGATE_FAULTS="none", GYMGATE_VARIANTS="none")
        seconds, text, code = timed(gymgate(*command), env)
        figures = [line.strip() for line in text.splitlines() if line.startswith("  ") and ": " in line]
        out["mutants"].append(
            {"name": name, "why": mutant["why"], "exit": code, "seconds": round(seconds, 1), "figures": figures}
        )
        subprocess.run(["rm", "-rf", runs, str(root)], check=False)
    return out


def render_load_mutants(pin: str, data: dict, command: str) -> str:
    lines = [
        f"<!-- load-mutants:{pin}:begin -->",
        f"### Load mutants of the {pin} sdist",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Each judged by `accept --gym-ref <mutant> --baseline "
        f"{pin} --load` (tests/integration/test_load_mutants.py runs the same).",
        "",
        "| mutant | exit | time | the verdict's figures |",
        "|---|---|---|---|",
    ]
    for m in data["load-mutants"]["mutants"]:
        figures = "<br>".join(f.replace("|", "\\|") for f in m["figures"]) or "no finding"
        lines.append(f"| {m['name']} | {m['exit']} | {m['seconds']} s | {figures} |")
    return "\n".join([*lines, f"<!-- load-mutants:{pin}:end -->"])


def bench_load_releases(pins: list[str]) -> dict:
    """Every consecutive pair of `pins` under load (`accept --gym-ref NEWER --baseline OLDER --load`, the default
    set): what each release changed in Gym's cost or behaviour under concurrency, by the verdict's own figures —
    regressions and improvements of cost, correctness under load and under a saturated policy server, each side."""
    from gymgate.load.judge import CorrectnessVerdict, MetricVerdict  # noqa: PLC0415 - the bench's only use
    from gymgate.load.saturation import SaturationVerdict  # noqa: PLC0415 - the bench's only use

    runs = tempfile.mkdtemp(prefix="gg-bench-load-")
    env = dict(os.environ, GYMGATE_RUNS=runs)
    out: dict = {"pairs": []}
    for older, newer in zip(pins, pins[1:], strict=False):
        before = set(Path(runs).glob("*-load-*/load/load.json"))
        seconds, text, code = timed(gymgate("accept", "--gym-ref", newer, "--baseline", older, "--load"), env)
        pair: dict = {"pair": f"{older} → {newer}", "exit": code, "seconds": round(seconds)}
        out["pairs"].append(pair)
        if set(Path(runs).glob("*-load-*/load/load.json")) == before:
            pair["findings"] = [f"no load run: {text.strip().splitlines()[-1] if text.strip() else 'no output'}"]
            continue
        record = _newest_load(runs)
        verdict = record["verdict"]
        confidence = verdict["confidence"]
        metrics = [MetricVerdict(**m) for m in verdict["metrics"]]
        shown = {"regression": [], "improved": [], "suspicious": [], "acknowledged": []}
        for m in metrics:
            if m.category in shown:
                shown[m.category].append(m.figure(confidence))
        judged = [CorrectnessVerdict(**c) for c in verdict["correctness"]]
        judged += [SaturationVerdict(**s) for s in verdict.get("saturation", [])]
        pair.update(
            load_code=verdict["code"],
            load_s=round(record["finished"] - record["started"]),
            envs=sorted(record["envs"]),
            levels=record["levels"],
            findings=[
                *(c.figure() for c in judged if c.category != "holds under load"),
                *(f"regression: {f}" for f in shown["regression"]),
                *(f"improved: {f}" for f in shown["improved"]),
                *(f"acknowledged: {f}" for f in shown["acknowledged"]),
                *verdict["unjudged"],
            ],
            suspicious=len(shown["suspicious"]),
        )
    subprocess.run(["rm", "-rf", runs], check=False)
    return out


# A saturation finding as verdict lines say it: "<env>: <category> with the policy server saturated (<name>): <what>,
# <details> (baseline: …)". The same finding in several environments is said once, for all of them.
SATURATION_FINDING = re.compile(
    r"^(?P<env>[\w.-]+): (?P<head>.+? with the policy server saturated \([\w-]+\)): (?P<what>[^,(]+)"
)


def _folded(findings: list[str]) -> list[str]:
    """Each finding once: a saturation finding several environments share folded into one line naming them (its
    per-environment details are in the bench's JSON), any other line kept, cut at 300 characters."""
    folded: dict[str, list[str]] = {}
    for line in findings:
        match = SATURATION_FINDING.match(line)
        key = f"{match['head']}: {match['what'].strip()}" if match else line[:300]
        folded.setdefault(key, []).extend([match["env"]] if match else [])
    return [f"{', '.join(envs)}: {key}" if envs else key for key, envs in folded.items()]


def render_load_releases(data: dict, command: str) -> str:
    lines = [
        "<!-- load-releases:all:begin -->",
        "### Every release under load",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Each consecutive pair, the default set; exit is the "
        "bump's (acceptance and load), load its own verdict's code.",
        "",
        "| bump | exit | load | what changed under load | load run | whole bump |",
        "|---|---|---|---|---|---|",
    ]
    for p in data["load-releases"]["pairs"]:
        found = "<br>".join(x.replace("|", "\\|") for x in _folded(p["findings"])) or "no change under load"
        if p.get("suspicious"):
            found += f"<br>({p['suspicious']} suspicious, not significant)"
        load_s = f"{p['load_s']} s" if "load_s" in p else "—"
        lines.append(
            f"| {p['pair']} | {p['exit']} | {p.get('load_code', '—')} | {found} | {load_s} | {p['seconds']} s |"
        )
    return "\n".join([*lines, "<!-- load-releases:all:end -->"])
