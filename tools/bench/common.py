"""What every bench uses: gymgate's command line, timed; the memory of a run's processes; the one run folder of a
runs folder; medians and a section's table; and publishing a bench (docs/benchmarks/<what>-<label>.json and its
section of docs/benchmarks.md)."""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from gymgate.runfolder import RunFolder

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def run_processes(runs_dir: str) -> Iterator[Path]:
    """The /proc entry of every live process this benchmark's run started: they all inherit GYMGATE_RUNS."""
    needle = f"GYMGATE_RUNS={runs_dir}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                yield entry
        except OSError:
            continue


def memory_of_run(runs_dir: str) -> tuple[int, int]:
    """(summed RSS, summed PSS) in bytes of every process this benchmark's run started. RSS counts a page shared by
    forked processes once per process (an upper bound); PSS divides it among them (what the run really holds)."""
    rss = pss = 0
    for entry in run_processes(runs_dir):
        try:
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return rss, pss


def sample_peak(runs: str, done: threading.Event, peak: list[int]) -> None:
    """peak[0]: the highest summed RSS seen, peak[1]: the highest summed PSS."""
    peak.extend([0] * (2 - len(peak)))
    while not done.is_set():
        rss, pss = memory_of_run(runs)
        peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
        time.sleep(0.5)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str, int]:
    """Run `cmd` and time it. Ctrl-C is passed on as SIGINT and the command is let stop its own runs (gymgate
    sweeps what it started); killing it outright would orphan its Gyms."""
    began = time.monotonic()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = child.communicate()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=300)
        raise
    return time.monotonic() - began, out, child.returncode


def gymgate(*args: str) -> list[str]:
    return [sys.executable, "-m", "gymgate", *args]


def median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def table(
    tag: str, title: str, data: dict, command: str, rows: list[tuple[str, list[float], str]], notes: list[str]
) -> str:
    lines = [
        f"<!-- {tag}:begin -->",
        f"### {title}",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Median of {data['repeats']} runs (all runs listed).",
        "",
        "| measure | median | runs |",
        "|---|---|---|",
    ]
    for label, values, unit in rows:
        lines.append(f"| {label} | {median(values)} {unit} | {', '.join(str(round(v, 2)) for v in values)} |")
    return "\n".join([*lines, "", *notes, f"<!-- {tag}:end -->"])


def one_run(runs: str) -> RunFolder:
    (run_dir,) = [d for d in Path(runs).iterdir() if d.is_dir()]
    return RunFolder(run_dir)


def publish(what: str, label: str, data: dict, section: str) -> None:
    """Write the figures to docs/benchmarks/<what>-<label>.json and put `section` into docs/benchmarks.md: in place
    of the section tagged <what>:<label>, or at the end where there is none."""
    (DOCS / "benchmarks").mkdir(parents=True, exist_ok=True)
    (DOCS / "benchmarks" / f"{what}-{label}.json").write_text(json.dumps(data, indent=2) + "\n")
    doc = DOCS / "benchmarks.md"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\nProduced by `nox -s bench`; never by timed tests.\n"
    tag = re.escape(f"{what}:{label}")
    pattern = re.compile(rf"<!-- {tag}:begin -->.*?<!-- {tag}:end -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    doc.write_text(text)
