"""Benchmark: environment build (cold, warm reuse) and Gym service start-up for one pin.

Run with `nox -s bench -- [--pin 0.4.0] [--repeats 3]`. Writes docs/benchmarks/services-<pin>.json and
rewrites the matching section of docs/benchmarks.md. Figures are medians over --repeats runs; the
machine is noisy, so compare ratios rather than single numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def rss_of_run(runs_dir: str) -> int:
    """Summed RSS (bytes) of every process this benchmark's run started: they all inherit GYMGATE_RUNS."""
    needle = f"GYMGATE_RUNS={runs_dir}".encode()
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _sample_peak(runs: str, done: threading.Event, peak: list[int]) -> None:
    while not done.is_set():
        peak[0] = max(peak[0], rss_of_run(runs))
        time.sleep(0.5)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str, int]:
    began = time.monotonic()
    result = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return time.monotonic() - began, result.stdout + result.stderr, result.returncode


def gymgate(*args: str) -> list[str]:
    return [sys.executable, "-m", "gymgate", *args]


def bench_env(pin: str, repeats: int) -> dict:
    cold, warm = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="gg-bench-") as cache:
            env = dict(os.environ, GYMGATE_CACHE=cache)
            seconds, out, code = timed(gymgate("env", "--gym-ref", pin), env)
            assert code == 0, out
            cold.append(seconds)
            seconds, out, code = timed(gymgate("env", "--gym-ref", pin), env)
            assert code == 0 and "reused" in out, out
            warm.append(seconds)
    return {"cold_build_s": cold, "warm_reuse_s": warm}


def bench_up(pin: str, repeats: int) -> dict:
    ready, stop, wall, peaks = [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="gg-bench-runs-") as runs:
            peak = [0]
            done = threading.Event()

            sampler = threading.Thread(target=_sample_peak, args=(runs, done, peak), daemon=True)
            sampler.start()
            seconds, out, code = timed(gymgate("up", "--gym-ref", pin), dict(os.environ, GYMGATE_RUNS=runs))
            done.set()
            sampler.join()
            assert code == 0, out
            (run_dir,) = Path(runs).iterdir()
            record = json.loads((run_dir / "services.json").read_text())
            ready.append(record["ready_seconds"])
            stop.append(record["stop_seconds"])
            wall.append(seconds)
            peaks.append(peak[0] / 2**30)
    return {"all_ready_s": ready, "stop_s": stop, "up_wall_s": wall, "peak_rss_gib": peaks}


def median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def render(pin: str, data: dict, command: str) -> str:
    rows = [
        ("cold environment build (empty gymgate cache, warm uv cache)", data["env"]["cold_build_s"], "s"),
        ("warm reuse (second run, zero installs)", data["env"]["warm_reuse_s"], "s"),
        ("all servers of the seven environments ready", data["up"]["all_ready_s"], "s"),
        ("graceful stop of all Gym actors", data["up"]["stop_s"], "s"),
        ("`gymgate up` wall time (resolve + env + start + probe + stop)", data["up"]["up_wall_s"], "s"),
        ("peak RSS of the run's processes (Ray + 7 Gyms)", data["up"]["peak_rss_gib"], "GiB"),
    ]
    lines = [
        f"<!-- services:{pin}:begin -->",
        f"### Environments and Gym services, nemo-gym {pin}",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Median of {data['repeats']} runs (all runs listed).",
        "",
        "| measure | median | runs |",
        "|---|---|---|",
    ]
    for label, values, unit in rows:
        lines.append(f"| {label} | {median(values)} {unit} | {', '.join(str(round(v, 2)) for v in values)} |")
    ratio = median(data["env"]["cold_build_s"]) / max(median(data["env"]["warm_reuse_s"]), 1e-3)
    lines += ["", f"Warm reuse is {ratio:.0f}× faster than a cold build.", f"<!-- services:{pin}:end -->"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pin", default="0.4.0")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = {
        "pin": args.pin,
        "repeats": args.repeats,
        "host": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d"),
        "env": bench_env(args.pin, args.repeats),
        "up": bench_up(args.pin, args.repeats),
    }
    (DOCS / "benchmarks").mkdir(parents=True, exist_ok=True)
    (DOCS / "benchmarks" / f"services-{args.pin}.json").write_text(json.dumps(data, indent=2) + "\n")
    section = render(args.pin, data, f"nox -s bench -- --pin {args.pin} --repeats {args.repeats}")
    doc = DOCS / "benchmarks.md"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\nProduced by `nox -s bench`; never by timed tests.\n"
    pattern = re.compile(
        rf"<!-- services:{re.escape(args.pin)}:begin -->.*?<!-- services:{re.escape(args.pin)}:end -->", re.S
    )
    text = pattern.sub(section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    doc.write_text(text)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
