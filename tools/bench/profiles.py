"""Which verdicts an RL profile changes: one release's default set (its cases, recordings, default faults and forms)
judged once under each RL profile gymgate models, path by path — the outcome, the failures and how a fault was
handled — so the paths a profile change touches are listed, and every other path is shown to be judged alike."""

from __future__ import annotations

import os
import subprocess
import tempfile

from gymgate.rl.profile import names

from .common import gymgate, one_run, timed


def verdict_of(record) -> dict:
    """What a profile may change of a path's verdict."""
    return {
        "outcome": record.outcome,
        "failures": sorted(f"[{f.kind}] {f.field}: {f.actual}" for f in record.failures),
        "handled": record.section("fault").get("handled", ""),
        "reason": record.reason.splitlines()[0][:200] if record.reason and not record.failures else "",
    }


def bench_profiles(pin: str) -> dict:
    """`accept --gym-ref PIN --no-baseline --rl-profile P --no-cache` for every profile, one after another."""
    out: dict = {"pin": pin, "profiles": {}}
    for profile in names():
        runs = tempfile.mkdtemp(prefix="gg-bench-profiles-")
        args = ["accept", "--gym-ref", pin, "--no-baseline", "--no-cache", "--rl-profile", profile, "--runs-dir", runs]
        seconds, text, code = timed(gymgate(*args), dict(os.environ))
        assert code in (0, 1), text
        records = one_run(runs).records()
        out["profiles"][profile] = {
            "exit_code": code,
            "wall_s": round(seconds, 1),
            "paths": {path: verdict_of(record) for path, record in sorted(records.items())},
        }
        subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_profiles(data: dict, command: str) -> str:
    found = data["profiles"]
    profiles = list(found["profiles"])
    first, *others = profiles
    paths = sorted(found["profiles"][first]["paths"])
    differ = [
        p
        for p in paths
        if any(found["profiles"][o]["paths"].get(p) != found["profiles"][first]["paths"][p] for o in others)
    ]
    lines = [
        "<!-- profiles:every:begin -->",
        "### Verdicts each RL profile gives",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. {found['pin']}'s default set (cases, recordings, "
        f"default faults and forms), once under each profile. {len(paths)} paths; {len(differ)} judged otherwise "
        "by some profile (outcome, failures, how a fault was handled):",
        "",
        "| path | " + " | ".join(f"`{p}`" for p in profiles) + " |",
        "|---|" + "---|" * len(profiles),
    ]
    for path in differ:
        cells = []
        for profile in profiles:
            seen = found["profiles"][profile]["paths"].get(path) or {}
            said = "; ".join(seen.get("failures") or []) or seen.get("reason") or ""
            handled = f" ({seen['handled']})" if seen.get("handled") else ""
            cells.append(f"{seen.get('outcome', '—')}{handled}{': ' + said if said else ''}".replace("|", "\\|"))
        lines.append(f"| `{path}` | " + " | ".join(cells) + " |")
    walls = ", ".join(f"`{p}` {v['wall_s']} s (exit {v['exit_code']})" for p, v in found["profiles"].items())
    lines += ["", f"Runs: {walls}.", "<!-- profiles:every:end -->"]
    return "\n".join(lines)
