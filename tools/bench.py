"""Benchmarks (never timed tests): `nox -s bench -- WHAT [--pin 0.4.0] [--repeats 3] ...`, WHAT one of:

services:  environment build (cold, warm reuse), all Gym services ready (`gymgate up`), stop, peak memory.
paths:     one pin's fourteen paths through `gymgate accept`, wall time and each stage, per --workers setting
           (default `1,auto`, alternated run by run).
compare:   a bump judged (`accept --gym-ref PIN --baseline B`), from scratch and with the baseline reused.
noise:     no false alarms: --repeats runs of the same pin, each later run compared with the first (`gymgate
           compare`): exit codes, changed fields, flaky and any category other than same-pass / skipped.
neighbour: a checkout with the pin's dependencies (its sdist plus one changed file) built from the pin's environment
           as its neighbour, against the pin's full build, in a fresh gymgate cache.
cached:    `nox -s accept -- --gym-ref PIN --no-baseline` of an unchanged ref, first run and then served from the cache.
matrix:    `gymgate matrix` over every pin, once with nothing cached (each ref's session) and then fully cached.
bisect:    `gymgate bisect` over 64 commits built from the pin's sdist, one of which breaks mcqa's verifier.
pins:      two pins' fourteen paths in one bench run, alternated run by run (warm environments): each pin's wall
           time and the ratio (`--pin 0.7.0 --baseline 0.4.0`).
bump:      a bump from a cold gymgate cache with the interpreters present (`--pin 0.7.0 --baseline 0.4.0`): where
           the time goes (both environments built, the baseline run, the candidate run, the comparison).
attempts:  what the second attempt of every path (in the same Gym) costs: one pin's fourteen paths with
           --attempts 1 and 2, alternated in one bench run; the ratio of the medians.
replays:   the default set with its recordings replayed and without (`--no-replays`), alternated: what the replays
           cost in wall time.
startup:   where a default-set run's CPU goes (`accept --no-baseline --no-cache`): CPU seconds by kind of process
           (Gym's servers by kind, Ray, the harness), the run's wall time and the paths' own time.
fidelity:  every pin's default set with every recording replayed (`gymgate matrix --no-cache`): per release and
           environment, how many recordings reproduce and why the others do not. `--env-set all`: each pin alone
           with every runnable environment (`--pins A,B` for some), totals per release.
cluster:   `--ray-address` on a local two-node Ray cluster (tools/local_cluster.py): a unit on cold nodes (each
           builds gymgate's and the pin's environments itself), then `accept --env mcqa` of the pin here and on
           the cluster, alternated: what a unit costs beyond the run it carries; and a two-pin matrix there.
hang:      a Gym whose verifier never returns (structured_outputs, built from the pin's sdist) judged end to end
           against the pin with the default reruns: the per-path deadlines derived from the baseline decide it.

Writes docs/benchmarks/<what>-<pin>.json and rewrites that section of docs/benchmarks.md. Figures are
medians over --repeats runs; the machine is noisy, so compare ratios rather than single numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gymgate.outcomes import SKIP
from gymgate.pathid import PathId
from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.refs.scratch import commit_all, git
from gymgate.report.variants import disagreements
from gymgate.runfolder import RunFolder

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def rss_of_run(runs_dir: str) -> int:
    """Summed RSS (bytes) of every process this benchmark's run started: they all inherit GYMGATE_RUNS."""
    return memory_of_run(runs_dir)[0]


def memory_of_run(runs_dir: str) -> tuple[int, int]:
    """(summed RSS, summed PSS) in bytes of every process this benchmark's run started. RSS counts a page shared by
    forked processes once per process (an upper bound); PSS divides it among them (what the run really holds)."""
    needle = f"GYMGATE_RUNS={runs_dir}".encode()
    rss = pss = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return rss, pss


def _sample_peak(runs: str, done: threading.Event, peak: list[int]) -> None:
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
            record = RunFolder(run_dir).up_record()
            ready.append(record["ready_seconds"])
            stop.append(record["stop_seconds"])
            wall.append(seconds)
            peaks.append(peak[0] / 2**30)
    return {"all_ready_s": ready, "stop_s": stop, "up_wall_s": wall, "peak_rss_gib": peaks}


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


def render_services(pin: str, data: dict, command: str) -> str:
    rows = [
        ("cold environment build (empty gymgate cache, warm uv cache)", data["env"]["cold_build_s"], "s"),
        ("warm reuse (second run, zero installs)", data["env"]["warm_reuse_s"], "s"),
        ("all servers of the seven environments ready", data["up"]["all_ready_s"], "s"),
        ("graceful stop of all Gym actors", data["up"]["stop_s"], "s"),
        ("`gymgate up` wall time (resolve + env + start + probe + stop)", data["up"]["up_wall_s"], "s"),
        ("peak RSS of the run's processes (Ray + 7 Gyms)", data["up"]["peak_rss_gib"], "GiB"),
    ]
    ratio = median(data["env"]["cold_build_s"]) / max(median(data["env"]["warm_reuse_s"]), 1e-3)
    return table(
        f"services:{pin}",
        f"Environments and Gym services, nemo-gym {pin}",
        data,
        command,
        rows,
        [f"Warm reuse is {ratio:.0f}× faster than a cold build."],
    )


def bench_paths(pin: str, repeats: int, workers: list[str]) -> dict:
    """Alternate the worker settings run by run (so drift on a noisy machine hits both alike). The environment
    is built first, outside the measurement: these figures are for a warm environment."""
    seconds, text, code = timed(gymgate("env", "--gym-ref", pin), dict(os.environ))
    assert code == 0, text
    out: dict = {}
    for _ in range(repeats):
        for n in workers:
            runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
            peak, done = [0], threading.Event()
            sampler = threading.Thread(target=_sample_peak, args=(runs, done, peak), daemon=True)
            sampler.start()
            seconds, text, code = timed(
                gymgate("accept", "--gym-ref", pin, "--no-baseline", "-n", n, "--no-cache"),
                dict(os.environ, GYMGATE_RUNS=runs),
            )
            done.set()
            sampler.join()
            assert code == 0, text
            (run_dir,) = Path(runs).iterdir()
            run = RunFolder(run_dir)
            started = run.source_file.stat().st_mtime
            paths = [r.to_json() for r in run.records().values()]
            services = list(run.service_statuses().values())
            workers_ = list(run.workers().values())
            row = out.setdefault(n, {})
            for key, value in (
                ("wall_s", seconds),
                ("first_result_s", min(p["timings"]["finished_at"] for p in paths) - started),
                ("all_gyms_ready_s", max(s.at for s in services) - started),
                ("gym_start_s_sum", sum(s.seconds for s in services)),
                ("rollout_s_sum", sum(p["timings"]["path_s"] for p in paths)),
                ("stop_s", max(w.stop_seconds or 0 for w in workers_)),
                ("peak_rss_gib", peak[0] / 2**30),
            ):
                row.setdefault(key, []).append(round(value, 3))
            subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_paths(pin: str, data: dict, command: str) -> str:
    runs = data["paths"]
    labels = [
        ("wall_s", "`gymgate accept` wall time, fourteen paths", "s"),
        ("first_result_s", "time to the first path result", "s"),
        ("all_gyms_ready_s", "time until the last Gym is ready", "s"),
        ("gym_start_s_sum", "Gym start-up, summed over environments", "s"),
        ("rollout_s_sum", "rollouts + postprocess + checks, summed over paths", "s"),
        ("stop_s", "stop (slowest worker)", "s"),
        ("peak_rss_gib", "peak RSS of the run's processes", "GiB"),
    ]
    rows = [(f"{label} (-n {n})", runs[n][key], unit) for key, label, unit in labels for n in runs]
    notes = []
    if "1" in runs and "auto" in runs:
        ratio = median(runs["1"]["wall_s"]) / max(median(runs["auto"]["wall_s"]), 1e-3)
        notes.append(f"Speed-up of -n auto over -n 1: {ratio:.2f}× (median wall times).")
    return table(f"paths:{pin}", f"The fourteen paths, nemo-gym {pin}", data, command, rows, notes)


def _one_run(runs: str) -> RunFolder:
    (run_dir,) = [d for d in Path(runs).iterdir() if d.is_dir()]
    return RunFolder(run_dir)


def bench_pins(pin: str, baseline: str, repeats: int) -> dict:
    """`accept --no-baseline -n auto` of each pin, alternated (drift hits both alike); environments warm."""
    for ref in (baseline, pin):
        seconds, text, code = timed(gymgate("env", "--gym-ref", ref), dict(os.environ))
        assert code == 0, text
    out: dict = {}
    for _ in range(repeats):
        for ref in (baseline, pin):
            runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
            argv = gymgate("accept", "--gym-ref", ref, "--no-baseline", "--no-cache")
            seconds, text, code = timed(argv, dict(os.environ, GYMGATE_RUNS=runs))
            assert code == 0, text
            run = _one_run(runs)
            started = run.source_file.stat().st_mtime
            services = list(run.service_statuses().values())
            paths = [r.to_json() for r in run.records().values()]
            row = out.setdefault(ref, {})
            for key, value in (
                ("wall_s", seconds),
                ("all_gyms_ready_s", max(s.at for s in services) - started),
                ("rollout_s_sum", sum(p["timings"]["path_s"] for p in paths)),
                ("servers", sum(len(s.servers) for s in services)),
            ):
                row.setdefault(key, []).append(round(value, 3))
            subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_pins(pin: str, baseline: str, data: dict, command: str) -> str:
    runs = data["pins"]
    labels = [
        ("wall_s", "`gymgate accept` wall time, fourteen paths", "s"),
        ("all_gyms_ready_s", "time until the last Gym is ready", "s"),
        ("rollout_s_sum", "rollouts + postprocess + checks, summed over paths", "s"),
        ("servers", "Gym server processes started", ""),
    ]
    rows = [(f"{label} ({ref})", runs[ref][key], unit) for key, label, unit in labels for ref in (baseline, pin)]
    ratio = median(runs[pin]["wall_s"]) / max(median(runs[baseline]["wall_s"]), 1e-3)
    notes = [f"{pin} / {baseline} wall time: {ratio:.2f}× (medians, same bench run, alternated)."]
    return table(f"pins:{pin}", f"nemo-gym {pin} beside {baseline}, fourteen paths each", data, command, rows, notes)


def bench_bump(pin: str, baseline: str, repeats: int) -> dict:
    """`accept --gym-ref PIN --baseline B` from an empty gymgate cache, the interpreters gymgate built linked in
    (so the figure is the bump's, not a CPython build's); uv's own cache stays warm, as on a CI runner that keeps
    it. Stages from the command's own lines and the run folders."""
    from gymgate.envs.cpython import pythons_dir

    out: dict = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="gg-bench-cold-") as cache:
            if pythons_dir().is_dir():
                (Path(cache) / "pythons").symlink_to(pythons_dir())
            runs = Path(cache) / "runs"
            env = dict(os.environ, GYMGATE_CACHE=cache, GYMGATE_RUNS=str(runs))
            seconds, text, code = timed(gymgate("accept", "--gym-ref", pin, "--baseline", baseline), env)
            assert code in (0, 1), text
            built = [float(m) for m in re.findall(r"environment \S+: built.*? in ([\d.]+)s", text)]
            walls = {}
            for run_dir in sorted(d for d in runs.iterdir() if d.is_dir()):
                mark = RunFolder(run_dir).mark()
                if mark is not None and mark.started and mark.finished:
                    walls[RunFolder(run_dir).source().get("name")] = mark.finished - mark.started
            row = out.setdefault("bump", {})
            for key, value in (
                ("wall_s", seconds),
                ("env_build_s_sum", sum(built)),
                (f"run_{baseline}_s", walls.get(baseline, 0.0)),
                (f"run_{pin}_s", walls.get(pin, 0.0)),
                ("exit_code", code),
            ):
                row.setdefault(key, []).append(round(value, 3))
    return out


def render_bump(pin: str, baseline: str, data: dict, command: str) -> str:
    runs = data["bump"]["bump"]
    rows = [
        (f"`accept --gym-ref {pin} --baseline {baseline}` wall time, cold gymgate cache", runs["wall_s"], "s"),
        ("both environments built (uv sync into an empty cache)", runs["env_build_s_sum"], "s"),
        (f"the {baseline} run (start to finish)", runs[f"run_{baseline}_s"], "s"),
        (f"the {pin} run (start to finish)", runs[f"run_{pin}_s"], "s"),
        ("exit code", runs["exit_code"], ""),
    ]
    rest = median(runs["wall_s"]) - median(runs["env_build_s_sum"]) - median(runs[f"run_{baseline}_s"])
    rest -= median(runs[f"run_{pin}_s"])
    notes = [f"Everything else (resolving, locking checks, comparison, reports): ~{rest:.0f} s of the median."]
    return table(f"bump:{pin}", f"A bump {baseline} → {pin} from a cold gymgate cache", data, command, rows, notes)


def bench_compare(pin: str, baseline: str, repeats: int) -> dict:
    """A bump judged from scratch (baseline run + candidate run + comparison) and again with the stored baseline
    reused, in a fresh runs folder each repeat. Both environments are built first, outside the measurement."""
    for ref in (pin, baseline):
        seconds, text, code = timed(gymgate("env", "--gym-ref", ref), dict(os.environ))
        assert code == 0, text
    out: dict = {"fresh_s": [], "reused_s": []}
    for _ in range(repeats):
        runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
        env = dict(os.environ, GYMGATE_RUNS=runs)
        for key in ("fresh_s", "reused_s"):
            seconds, text, code = timed(gymgate("accept", "--gym-ref", pin, "--baseline", baseline), env)
            assert code in (0, 1), text
            assert (key == "reused_s") == ("cached: " in text), text
            out[key].append(round(seconds, 3))
        subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_compare(pin: str, baseline: str, data: dict, command: str) -> str:
    runs = data["compare"]
    rows = [
        (f"`gymgate accept --gym-ref {pin} --baseline {baseline}`, both run", runs["fresh_s"], "s"),
        ("the same again, the stored baseline reused", runs["reused_s"], "s"),
    ]
    ratio = median(runs["fresh_s"]) / max(median(runs["reused_s"]), 1e-3)
    notes = [f"Reusing the baseline: {ratio:.2f}× faster (median wall times)."]
    return table(f"compare:{pin}", f"A bump judged, {baseline} → {pin}", data, command, rows, notes)


def bench_neighbour(pin: str, repeats: int) -> dict:
    """A Gym checkout whose dependencies match the pin's (the pin's sdist plus one changed file, as two commits
    between releases differ): its environment built from the pin's as its neighbour, against the pin's full build.
    In a fresh gymgate cache (warm uv cache); each repeat is a new checkout, so nothing is reused."""
    out: dict = {"full_build_s": [], "neighbour_env_s": [], "neighbour_wall_s": []}
    with tempfile.TemporaryDirectory(prefix="gg-bench-") as scratch:
        env = dict(os.environ, GYMGATE_CACHE=f"{scratch}/cache")
        seconds, text, code = timed(gymgate("env", "--gym-ref", pin), env)
        assert code == 0 and " built in " in text, text
        out["full_build_s"].append(float(re.search(r" built in ([\d.]+)s", text).group(1)))
        for n in range(repeats):
            tree = Path(scratch) / f"gym-{n}"
            unpack(sdist(pin), tree)
            (tree / "gymgate-bench.txt").write_text(f"commit {n}\n")
            seconds, text, code = timed(gymgate("env", "--gym-ref", str(tree)), env)
            found = re.search(r"built from \w+ \(installed ([^)]*)\) in ([\d.]+)s", text)
            assert code == 0 and found, text
            out["neighbour_env_s"].append(float(found.group(2)))
            out["neighbour_wall_s"].append(round(seconds, 3))
    return out


def render_neighbour(pin: str, data: dict, command: str) -> str:
    runs = data["neighbour"]
    rows = [
        (f"environment of nemo-gym {pin} built from scratch (uv sync --compile-bytecode)", runs["full_build_s"], "s"),
        (
            "environment of a checkout with the same dependencies, built from that neighbour",
            runs["neighbour_env_s"],
            "s",
        ),
        ("`gymgate env` wall time for that checkout (resolve, lock its project, build)", runs["neighbour_wall_s"], "s"),
    ]
    ratio = median(runs["full_build_s"]) / max(median(runs["neighbour_env_s"]), 1e-3)
    notes = [f"Building from the neighbour: {ratio:.1f}× faster than from scratch (medians)."]
    return table(f"neighbour:{pin}", f"Environments from neighbours, nemo-gym {pin}", data, command, rows, notes)


def bench_cached(pin: str, repeats: int) -> dict:
    """`nox -s accept` of an unchanged ref, end to end through nox, after one fresh run stored it."""
    nox = shutil.which("nox")
    assert nox, "nox is not on PATH"
    runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
    env = dict(os.environ, GYMGATE_RUNS=runs)
    command = [nox, "-s", "accept", "--", "--gym-ref", pin, "--no-baseline"]
    seconds, text, code = timed(command, env)
    assert code == 0 and "cached: " not in text, text
    out: dict = {"fresh_s": [round(seconds, 3)], "cached_s": []}
    for _ in range(repeats):
        seconds, text, code = timed(command, env)
        assert code == 0 and "cached: " in text, text
        out["cached_s"].append(round(seconds, 3))
    subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_cached(pin: str, data: dict, command: str) -> str:
    runs = data["cached"]
    rows = [
        (f"`nox -s accept -- --gym-ref {pin} --no-baseline`, first run (fourteen paths)", runs["fresh_s"], "s"),
        ("the same again, served from the cache (`cached: runs/…`)", runs["cached_s"], "s"),
    ]
    return table(f"cached:{pin}", f"A cached accept through nox, nemo-gym {pin}", data, command, rows, [])


def bench_matrix(repeats: int) -> dict:
    """`gymgate matrix` over every pin, all fourteen paths, with warm environments: once with nothing cached (where
    the time goes: each ref's session, then the comparisons), then `repeats` times with everything cached."""
    for pin in ("0.2.0", "0.2.1", "0.3.0", "0.4.0"):
        seconds, text, code = timed(gymgate("env", "--gym-ref", pin), dict(os.environ))
        assert code == 0, text
    runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
    env = dict(os.environ, GYMGATE_RUNS=runs)
    seconds, text, code = timed(gymgate("matrix", "--no-cache"), env)
    assert code in (0, 1), text
    out: dict = {"fresh_s": [round(seconds, 3)], "cached_s": [], "per_ref_s": {}}
    for mark in sorted(Path(runs).glob("*/run.json")):
        data = json.loads(mark.read_text())
        ref = RunFolder(mark.parent).source()["name"]
        out["per_ref_s"][ref] = round(data["finished"] - data["started"], 1)
    for _ in range(repeats):
        seconds, text, code = timed(gymgate("matrix"), env)
        assert code in (0, 1) and text.count("cached: ") == 4, text
        out["cached_s"].append(round(seconds, 3))
    subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_matrix(data: dict, command: str) -> str:
    runs = data["matrix"]
    per_ref = ", ".join(f"{ref} {s} s" for ref, s in runs["per_ref_s"].items())
    rows = [
        ("`gymgate matrix --no-cache`: four pins × fourteen paths, warm environments", runs["fresh_s"], "s"),
        ("`gymgate matrix` again, every ref served from the cache", runs["cached_s"], "s"),
    ]
    notes = [
        f"Where the fresh run's time goes — each ref's test session: {per_ref}; the rest is resolving, the cache "
        "look-ups and the three comparisons."
    ]
    return table("matrix:all", "The pin matrix", data, command, rows, notes)


def bench_cluster(pin: str, repeats: int) -> dict:
    """One unit's cost beyond its run: the pin's mcqa paths here and on a local two-node cluster, alternated, after
    one unit on cold nodes; then `matrix <baseline> <pin>` on the cluster (one unit per node at once)."""
    sys.path.insert(0, str(REPO / "tools"))
    import local_cluster

    from gymgate.locations import cache_dir

    root = Path(tempfile.mkdtemp(prefix="gg-bench-cluster-"))
    python = local_cluster.ray_python(root / "ray-python", REPO)
    caches = {name: root / f"cache-{name}" for name in ("node_a", "node_b")}
    out: dict = {"cold_s": [], "here_s": [], "there_s": [], "matrix_there_s": [], "matrix_here_s": []}
    accept = ("accept", "--gym-ref", pin, "--no-baseline", "--env", "mcqa", "--no-cache")
    with local_cluster.running(python, caches, cache_dir() / "pythons", root) as cluster:
        remote = ("--ray-address", cluster["address"], "--ray-python", python)
        env = dict(os.environ, GYMGATE_RUNS=str(root / "runs"))
        seconds, text, code = timed(gymgate(*accept, *remote), env)
        assert code == 0, text
        out["cold_s"].append(round(seconds, 3))
        for _ in range(repeats):
            for key, extra in (("here_s", ()), ("there_s", remote)):
                seconds, text, code = timed(gymgate(*accept, *extra), env)
                assert code == 0, text
                out[key].append(round(seconds, 3))
        pins = ("matrix", "0.4.0", pin, "--env", "mcqa", "--no-cache")
        for key, extra in (("matrix_here_s", ()), ("matrix_there_s", remote)):
            runs = root / key
            seconds, text, code = timed(gymgate(*pins, *extra), dict(env, GYMGATE_RUNS=str(runs)))
            assert code == 0, text
            out[key].append(round(seconds, 3))
    # The caller's own serial part, a comparison (what each bump of a matrix costs it), at two sizes: the matrix's
    # runs, and the same with mcqa's fault and variant paths (a fixed cost and a cost per path).
    wide = dict(env, GYMGATE_RUNS=str(root / "wide"), GYMGATE_FAULTS="default", GYMGATE_VARIANTS="default")
    seconds, text, code = timed(gymgate(*pins), wide)
    assert code == 0, text
    out["compare"] = {}
    for folder in ("matrix_here_s", "wide"):
        before, after = sorted(mark.parent for mark in (root / folder).glob("*/run.json"))
        paths, times = len(RunFolder(after).records()), []
        for _ in range(repeats):
            seconds, text, code = timed(gymgate("compare", str(before), str(after)), env)
            assert code == 0, text
            times.append(round(seconds, 3))
        out["compare"][str(paths)] = times
    shutil.rmtree(root, ignore_errors=True)
    return out


EVERY_ENV_PATHS = 330  # paths of one release's every-environment run (0.7.0: 329; bench fidelity --env-set all)


def makespan(walls: list[float], nodes: int, build_s: float, overhead_s: float) -> float:
    """When the last of `walls` (one unit each) ends on `nodes` nodes with one slot each, units placed as slots free
    up, longest first (what a dispatch of every ref at once comes to), each unit paying `overhead_s` and, on its
    node, `build_s` for its pin's environments (every unit runs another pin: always cold)."""
    ends = [0.0] * nodes
    for wall in sorted(walls, reverse=True):
        slot = ends.index(min(ends))
        ends[slot] += wall + build_s + overhead_s
    return max(ends)


def scaling_rows(overhead_s: float, compare_s: float) -> list[str]:
    """The nine-release matrix over every runnable environment, on 1-9 nodes like this machine: each release's
    every-environment run as measured (fidelity-every.json), each node building every pin it runs (bump-0.7.0.json:
    the environments of two pins from an empty cache), the caller's eight comparisons one after another."""
    walls = [
        r["wall_s"]
        for r in json.loads((DOCS / "benchmarks" / "fidelity-every.json").read_text())["fidelity_every"][
            "pins"
        ].values()
    ]
    build = json.loads((DOCS / "benchmarks" / "bump-0.7.0.json").read_text())["bump"]["bump"]["env_build_s_sum"][0] / 2
    serial = 8 * compare_s
    one = sum(walls) + len(walls) * build + serial  # this machine alone: no unit overhead, one env build per pin
    rows = [
        "| nodes | the units (longest first, as slots free) | + the caller's comparisons | wall | speed-up |",
        "|---|---|---|---|---|",
    ]
    rows.append(
        f"| 1 (here, no cluster) | {sum(walls) + len(walls) * build:.0f} s | {serial:.0f} s | {one:.0f} s | 1.00 |"
    )
    for nodes in (2, 3, 4, 5, 9):
        units = makespan(walls, nodes, build, overhead_s)
        rows.append(
            f"| {nodes} | {units:.0f} s | {serial:.0f} s | {units + serial:.0f} s | {one / (units + serial):.2f} |"
        )
    return rows


def render_cluster(pin: str, data: dict, command: str) -> str:
    runs = data["cluster"]
    rows = [
        (f"`accept --gym-ref {pin} --env mcqa` on cold nodes (each builds its environments)", runs["cold_s"], "s"),
        (f"`accept --gym-ref {pin} --env mcqa` here", runs["here_s"], "s"),
        ("the same on the cluster (warm nodes)", runs["there_s"], "s"),
        (f"`matrix 0.4.0 {pin} --env mcqa` here", runs["matrix_here_s"], "s"),
        ("the same on the cluster (one unit per node, at once)", runs["matrix_there_s"], "s"),
        *((f"`compare` of two runs of {n} paths", t, "s") for n, t in runs["compare"].items()),
    ]
    overhead = median(runs["there_s"]) - median(runs["here_s"])
    (small, small_s), (large, large_s) = sorted((int(n), median(t)) for n, t in runs["compare"].items())
    per_path = (large_s - small_s) / (large - small)
    every_env = small_s + (EVERY_ENV_PATHS - small) * per_path
    notes = [
        f"A unit costs {overhead:.1f} s beyond the run it carries (median there − median here; "
        f"×{median(runs['there_s']) / median(runs['here_s']):.2f}): the driver connecting, the checkout and the package "
        "shipped, gymgate's environment checked on the node, the run folder streamed back once a second. The two "
        "nodes share this machine's 2 cores, so the matrix's two units at once are no faster here than one after "
        "another, and each node built the environment of the pin it had not run before: the figure shows the units "
        "ran side by side, not a speed-up.",
        "",
        f"**Beyond this machine** (an estimate from measured parts, not a measurement): `nox -s matrix -- "
        "--env-set all` — the nine releases, every runnable environment (17-61 per release) — on 1-9 nodes like this "
        "one, one `gymgate` slot each. Each release's run takes what `bench fidelity --env-set all` measured for it "
        f"alone (125-730 s); a unit adds the {overhead:.1f} s measured above and its node builds that pin's "
        "environments cold (half of the `bench bump` figure for two, 37 s; the wide project's lock is not in it); the "
        f"caller then compares each neighbouring pair, one after another: {small_s} s for {small} paths and "
        f"{large_s} s for {large} here, so {per_path * 1000:.0f} ms per path beyond a fixed cost, about "
        f"{every_env:.0f} s for {EVERY_ENV_PATHS} paths. Units go longest first as slots free up.",
        "",
        *scaling_rows(overhead, every_env),
        "",
        "What stays serial: the longest release (0.7.0's 730 s) bounds the wall from five nodes on; the caller's "
        "eight comparisons follow the last unit; each node builds each pin it is given once (a second run of the "
        "matrix finds them built). More slots than releases help only a single ref split across nodes (`accept "
        "--shard` by hand today).",
    ]
    return table(f"cluster:{pin}", f"On a Ray cluster, nemo-gym {pin} (issue 32)", data, command, rows, notes)


MCQA_VERDICT = "        is_correct = (pred == gold) if (pred is not None and gold) else False\n"


def bench_bisect(pin: str, commits: int = 64, defect_at: int = 40) -> dict:
    """`gymgate bisect` over a history built from the pin's sdist: `commits` commits after it, one of which (at
    `defect_at`) breaks mcqa's verifier; the others change an unrelated file. Environments are built as bisect builds
    them (from neighbours); the gymgate cache is the user's."""
    with tempfile.TemporaryDirectory(prefix="gg-bench-") as scratch:
        repo = Path(scratch) / "gym"
        repo.mkdir()
        git(repo, "init", "-q")
        unpack(sdist(pin), repo)
        good = commit_all(repo, "sdist")
        shas = []
        for n in range(commits):
            if n == defect_at:
                app = repo / "resources_servers" / "mcqa" / "app.py"
                app.write_text(app.read_text().replace(MCQA_VERDICT, MCQA_VERDICT.replace("gold)", "gold.lower())")))
            else:
                (repo / "gymgate-bench.txt").write_text(f"commit {n}\n")
            shas.append(commit_all(repo, f"commit {n}"))
        out = Path(scratch) / "out"
        command = gymgate("bisect", "--good", good, "--bad", shas[-1], "--gym-repo", str(repo), "--env", "mcqa")
        command += ["-n", "1", "--runs-dir", f"{scratch}/runs", "--out", str(out)]
        seconds, text, code = timed(command, dict(os.environ))
        assert code == 1, text
        result = json.loads((out / "bisect.json").read_text())
        assert result["first_bad"]["commit"] == shas[defect_at], text
        return {"wall_s": [round(seconds, 3)], "steps": len(result["steps"]), "commits": commits}


def render_bisect(pin: str, data: dict, command: str) -> str:
    runs = data["bisect"]
    rows = [
        (
            f"`gymgate bisect` over {runs['commits']} commits, one breaking mcqa ({runs['steps']} steps)",
            runs["wall_s"],
            "s",
        )
    ]
    notes = [
        "Includes the good and bad runs (which choose the path to bisect) and every step's lock, environment "
        "(from a neighbour) and mcqa run; the first bad commit was named correctly."
    ]
    return table(f"bisect:{pin}", f"Bisect, nemo-gym {pin} history", data, command, rows, notes)


def bench_noise(pin: str, repeats: int) -> dict:
    """`repeats` runs of one pin, all fourteen paths; runs 2..N compared with run 1. Every figure must be 0."""
    seconds, text, code = timed(gymgate("env", "--gym-ref", pin), dict(os.environ))
    assert code == 0, text
    runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
    env = dict(os.environ, GYMGATE_RUNS=runs)
    out: dict = {
        "wall_s": [],
        "exit_code": [],
        "changed_paths": [],
        "flaky_paths": [],
        "nondeterministic_paths": [],
        "other_categories": [],
    }
    first = None
    for _ in range(repeats):
        seconds, text, code = timed(gymgate("accept", "--gym-ref", pin, "--no-baseline", "--no-cache"), env)
        assert code == 0, text
        out["wall_s"].append(round(seconds, 3))
        run = max(Path(runs).iterdir(), key=lambda p: p.stat().st_mtime)
        if first is None:
            first = run
            continue
        report = tempfile.mkdtemp(prefix="gg-bench-cmp-")
        seconds, text, code = timed(gymgate("compare", str(first), str(run), "--out", report), env)
        results = json.loads((Path(report) / "results.json").read_text())
        categories = [p["category"] for p in results["paths"]]
        out["exit_code"].append(code)
        out["changed_paths"].append(sum(1 for p in results["paths"] if p["changed"]))
        out["flaky_paths"].append(categories.count("flaky"))
        out["other_categories"].append(sum(1 for c in categories if c not in ("same-pass", "skipped")))
        out["nondeterministic_paths"].append(sum(1 for p in results["paths"] if p["nondeterministic"]))
    subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_noise(pin: str, data: dict, command: str) -> str:
    runs = data["noise"]
    rows = [
        ("`gymgate accept` wall time, fourteen paths, no baseline", runs["wall_s"], "s"),
        ("comparison exit code (run k vs run 1)", runs["exit_code"], ""),
        ("paths with any change in their full observation", runs["changed_paths"], ""),
        ("flaky paths", runs["flaky_paths"], ""),
        ("paths whose attempts disagree, on either run", runs.get("nondeterministic_paths", []), ""),
        ("paths in any category but same-pass / skipped", runs["other_categories"], ""),
    ]
    alarms = sum(runs["changed_paths"]) + sum(runs["other_categories"]) + sum(1 for c in runs["exit_code"] if c)
    notes = [
        f"{len(runs['exit_code'])} comparisons of identical runs, {alarms} false alarms. A change is any leaf of a "
        "path's full observation (every request the model received, everything Gym returned) that differs after "
        "the declared nondeterminism list (src/gymgate/compare/nondeterministic.toml)."
    ]
    return table(
        f"noise:{pin}", f"No false alarms: the same ref, run {data['repeats']} times", data, command, rows, notes
    )


def bench_attempts(pin: str, repeats: int) -> dict:
    """`accept --no-baseline -n auto` of one pin with one attempt per path and with the default two, alternated run
    by run (drift hits both alike); environments warm."""
    seconds, text, code = timed(gymgate("env", "--gym-ref", pin), dict(os.environ))
    assert code == 0, text
    out: dict = {}
    for _ in range(repeats):
        for attempts in ("1", "2"):
            runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
            argv = gymgate("accept", "--gym-ref", pin, "--no-baseline", "--no-cache", "--attempts", attempts)
            seconds, text, code = timed(argv, dict(os.environ, GYMGATE_RUNS=runs))
            assert code == 0, text
            records = list(_one_run(runs).records().values())
            row = out.setdefault(attempts, {})
            row.setdefault("wall_s", []).append(round(seconds, 3))
            rollouts = [a.timings.get("run_rollouts", 0.0) for r in records for a in r.attempt_records()[1:]]
            row.setdefault("extra_rollout_s_sum", []).append(round(sum(rollouts), 3))
            subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_attempts(pin: str, data: dict, command: str) -> str:
    runs = data["attempts"]
    rows = [
        ("`gymgate accept` wall time, fourteen paths, one attempt each", runs["1"]["wall_s"], "s"),
        ("the same, two attempts each (the default)", runs["2"]["wall_s"], "s"),
        ("second attempts' rollouts, summed over the fourteen paths", runs["2"]["extra_rollout_s_sum"], "s"),
    ]
    ratio = median(runs["2"]["wall_s"]) / max(median(runs["1"]["wall_s"]), 1e-3)
    notes = [f"Two attempts / one: {ratio:.2f}× wall time (medians, same bench run, alternated); target ≤ 1.15×."]
    return table(f"attempts:{pin}", f"The second attempt of every path, nemo-gym {pin}", data, command, rows, notes)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _process_kind(pid: Path) -> str:
    """What one process of a run is now, for the CPU profile: a Gym server (by its folder), Ray, the harness. Asked
    at every sample: a Ray worker becomes `ray::GymActor` after it starts, a shell may exec the server it runs."""
    cmd = (pid / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    if cmd.startswith("ray::GymActor") or "GymActor" in cmd:
        return "ray: Gym actors (the head server, Gym's launcher)"
    if cmd.startswith(("ray::DashboardAgent", "ray::RuntimeEnvAgent")):  # the raylet's agents name themselves so
        return "ray: its own daemons"
    if cmd.startswith("ray::"):
        return "ray: other workers (idle, the consumer's)"
    if "raylet" in cmd or "gcs_server" in cmd or "dashboard" in cmd or "log_monitor" in cmd or "ray/_private" in cmd:
        return "ray: its own daemons"
    if cmd.startswith(("/bin/bash", "bash", "tee", "/usr/bin/tee")):
        return "gym: the shell and tee around each server"
    try:
        cwd = os.readlink(pid / "cwd")
    except OSError:
        cwd = ""
    for kind in ("resources_servers", "responses_api_agents", "responses_api_models", "environment_servers"):
        if f"/{kind}/" in cwd or cwd.endswith(f"/{kind}"):
            return f"gym: {kind}"  # a server the launcher forked keeps the zygote's command line
    if "launcher.zygote" in cmd:
        return "gym: the launcher's zygotes (preloading)"
    if "pytest" in cmd or "xdist" in cmd or "execnet" in cmd or " -u -c " in cmd:  # xdist's workers: `python -u -c`
        return "harness: pytest workers (consumer, endpoint, checks)"
    return "harness: gymgate (parent, build, report)"


def _sample_cpu(runs: str, done: threading.Event, seen: dict) -> None:
    """CPU seconds (user + system) of every process the run started, by pid: the last reading before it exits,
    counted under what the process was at that reading."""
    needle = f"GYMGATE_RUNS={runs}".encode()
    while not done.is_set():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                ticks = int(fields[11]) + int(fields[12])  # utime, stime
                seen[entry.name] = (_process_kind(entry), ticks / CLOCK_TICKS)
            except (OSError, IndexError, ValueError):
                continue
        time.sleep(0.2)


EXEC, FORK, SHARED = "exec", "fork", "shared"  # how a run starts Gym (services/launcher, services/sharing)
LAUNCHERS = {
    EXEC: "Gym's own launch (a fresh interpreter per server, one instance per environment)",
    FORK: "the forking launcher, one instance per environment",
    SHARED: "the forking launcher, environments sharing instances (the default)",
}
SETTINGS = {  # the variables each start-up is chosen with
    EXEC: {"GYMGATE_LAUNCHER": "exec", "GYMGATE_ENVS_PER_GYM": "1"},
    FORK: {"GYMGATE_LAUNCHER": "fork", "GYMGATE_ENVS_PER_GYM": "1"},
    SHARED: {"GYMGATE_LAUNCHER": "fork"},
}


def bench_startup(pin: str, repeats: int) -> dict:
    """Where a default-set run's CPU goes, by kind of process (`accept --no-baseline --no-cache`, warm environment),
    with Gym's own launch, the forking launcher one instance per environment and the forking launcher with shared
    instances, alternated run by run (drift hits all alike): each process's CPU seconds sampled five times a second,
    summed by kind, next to the run's wall time and the paths' own time. Processes that live less than a sample are
    missed: the totals are a lower bound. Each run is `gymgate compare`d with Gym's own launch of the same round."""
    seconds, text, code = timed(gymgate("env", "--gym-ref", pin), dict(os.environ))
    assert code == 0, text
    out: dict = {mode: {"wall_s": [], "paths_s": [], "cpu_s": {}, "processes": []} for mode in LAUNCHERS}
    for mode in (FORK, SHARED):
        out[f"same:{mode}"] = {"exit_code": [], "changed_paths": [], "other_categories": []}
    for _ in range(repeats):
        folders = {}
        for mode in LAUNCHERS:
            row = out[mode]
            runs = folders[mode] = tempfile.mkdtemp(prefix="gg-bench-runs-")
            done, seen = threading.Event(), {}
            sampler = threading.Thread(target=_sample_cpu, args=(runs, done, seen), daemon=True)
            sampler.start()
            env = {k: v for k, v in os.environ.items() if k != "GYMGATE_ENVS_PER_GYM"}  # the default, unless set
            env.update(GYMGATE_RUNS=runs, **SETTINGS[mode])
            seconds, text, code = timed(gymgate("accept", "--gym-ref", pin, "--no-baseline", "--no-cache"), env)
            done.set()
            sampler.join()
            assert code in (0, 1), text  # 1: a pin whose own defects fail paths (0.4.0's metadata: null rows)
            records = list(_one_run(runs).records().values())
            row.setdefault("exit_code", []).append(code)
            row["wall_s"].append(round(seconds, 2))
            row["paths_s"].append(round(sum(r.timings.get("path_s", 0.0) for r in records), 2))
            row["processes"].append(len(seen))
            by_kind: dict[str, float] = {}
            for kind, cpu in seen.values():
                by_kind[kind] = by_kind.get(kind, 0.0) + cpu
            done_runs = len(row["wall_s"]) - 1  # a kind first seen now had no CPU in the runs before
            for kind in set(row["cpu_s"]) | set(by_kind):
                row["cpu_s"].setdefault(kind, [0.0] * done_runs).append(round(by_kind.get(kind, 0.0), 2))
        for mode in (FORK, SHARED):
            _same_results(folders[EXEC], folders[mode], out[f"same:{mode}"])
        subprocess.run(["rm", "-rf", *folders.values()], check=False)
    return out


def _same_results(baseline_runs: str, candidate_runs: str, out: dict) -> None:
    """`gymgate compare` of the two launchers' runs: the full observation of every path (every request the model
    received, everything Gym returned) must agree."""
    report = tempfile.mkdtemp(prefix="gg-bench-cmp-")
    baseline, candidate = _one_run(baseline_runs).root, _one_run(candidate_runs).root
    _seconds, _text, code = timed(gymgate("compare", str(baseline), str(candidate), "--out", report), dict(os.environ))
    results = json.loads((Path(report) / "results.json").read_text())
    out["exit_code"].append(code)
    out["changed_paths"].append(sum(1 for p in results["paths"] if p["changed"]))
    out["other_categories"].append(
        sum(1 for p in results["paths"] if p["category"] not in ("same-pass", "same-fail", "skipped"))
    )
    subprocess.run(["rm", "-rf", report], check=False)


def render_startup(pin: str, data: dict, command: str) -> str:
    runs = {mode: data["startup"][mode] for mode in LAUNCHERS}
    totals = {m: [sum(v[i] for v in r["cpu_s"].values()) for i in range(len(r["wall_s"]))] for m, r in runs.items()}
    rows = []
    for mode, row in runs.items():
        name = LAUNCHERS[mode]
        rows += [
            (f"{name}: `gymgate accept` wall time, the default set", row["wall_s"], "s"),
            (f"{name}: the paths' own time (rollout, postprocess, checks; all attempts), summed", row["paths_s"], "s"),
            (f"{name}: processes the run started (seen by the sampler)", row["processes"], ""),
            (f"{name}: the run's exit code", row.get("exit_code", []), ""),
            (f"{name}: CPU seconds of all of them", totals[mode], "s"),
        ]
        for kind in sorted(row["cpu_s"], key=lambda k: -median(row["cpu_s"][k])):
            rows.append((f"{name}: CPU: {kind}", row["cpu_s"][kind], "s"))
    for mode in (FORK, SHARED):
        same, name = data["startup"][f"same:{mode}"], LAUNCHERS[mode]
        rows += [
            (f"{name}: `gymgate compare` with Gym's own launch: exit code", same["exit_code"], ""),
            (f"{name}: paths with any change in their full observation", same["changed_paths"], ""),
            (f"{name}: paths in any category but same-pass / same-fail / skipped", same["other_categories"], ""),
        ]
    cores = os.cpu_count() or 1
    notes = [
        f"{LAUNCHERS[m]}: on {cores} cores the CPU alone takes at least {median(totals[m]) / cores:.0f} s of wall "
        f"time; the paths' own time spread over {cores} workers, {median(runs[m]['paths_s']) / cores:.1f} s, is the "
        f"floor of a run that starts nothing: the default set takes "
        f"{median(runs[m]['wall_s']) / max(median(runs[m]['paths_s']) / cores, 1e-3):.1f}× that."
        for m in runs
    ]
    for mode in (FORK, SHARED):
        ratio = median(runs[EXEC]["wall_s"]) / max(median(runs[mode]["wall_s"]), 1e-3)
        cpu = median(totals[EXEC]) / max(median(totals[mode]), 1e-3)
        notes.append(
            f"{LAUNCHERS[mode]} vs Gym's own launch: {ratio:.2f}× less wall time, {cpu:.2f}× less CPU (medians)."
        )
    return table(f"startup:{pin}", f"Where a default-set run's time goes, nemo-gym {pin}", data, command, rows, notes)


def bench_replays(pin: str, repeats: int) -> dict:
    """`accept --no-baseline -n auto` of one pin's default set with the hand-written paths alone (`--no-replays`)
    and with every recording replayed (the default), alternated run by run; environments warm."""
    seconds, text, code = timed(gymgate("env", "--gym-ref", pin), dict(os.environ))
    assert code == 0, text
    out: dict = {}
    for _ in range(repeats):
        for mode, extra in (("cases", ["--no-replays"]), ("replayed", [])):
            runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
            argv = gymgate("accept", "--gym-ref", pin, "--no-baseline", "--no-cache", *extra)
            seconds, text, code = timed(argv, dict(os.environ, GYMGATE_RUNS=runs))
            assert code == 0, text
            records = list(_one_run(runs).records().values())
            row = out.setdefault(mode, {})
            row.setdefault("wall_s", []).append(round(seconds, 3))
            row.setdefault("paths", []).append(len(records))
            replays = [r for r in records if r.recording]
            row.setdefault("replay_path_s_sum", []).append(round(sum(r.timings.get("path_s", 0.0) for r in replays), 3))
            subprocess.run(["rm", "-rf", runs], check=False)
    return out


def render_replays(pin: str, data: dict, command: str) -> str:
    runs = data["replays"]
    rows = [
        (
            "`gymgate accept` wall time, the default set's hand-written paths alone (`--no-replays`)",
            runs["cases"]["wall_s"],
            "s",
        ),
        ("the same with every recording replayed (the default)", runs["replayed"]["wall_s"], "s"),
        ("paths judged, hand-written alone", runs["cases"]["paths"], ""),
        ("paths judged with the replays", runs["replayed"]["paths"], ""),
        (
            "replayed paths' own time (rollout, postprocess, checks; both attempts), summed",
            runs["replayed"]["replay_path_s_sum"],
            "s",
        ),
    ]
    extra = median(runs["replayed"]["wall_s"]) - median(runs["cases"]["wall_s"])
    ratio = median(runs["replayed"]["wall_s"]) / max(median(runs["cases"]["wall_s"]), 1e-3)
    notes = [f"Replays add {extra:.0f} s to the default set ({ratio:.2f}× wall time, medians, alternated runs)."]
    return table(
        f"replays:{pin}", f"The default set with its recordings replayed, nemo-gym {pin}", data, command, rows, notes
    )


def bench_fidelity() -> dict:
    """`gymgate matrix --no-cache` over every pin (the default set, every recording replayed on every pin), then
    each pin's replay fidelity per environment from its run's records (report/fidelity.py)."""
    from gymgate.report.fidelity import fidelity

    runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
    seconds, text, code = timed(gymgate("matrix", "--no-cache"), dict(os.environ, GYMGATE_RUNS=runs))
    out: dict = {"wall_s": round(seconds, 3), "exit_code": code, "pins": {}, "verdicts": _verdict_lines(text)}
    for run_dir in sorted(d for d in Path(runs).iterdir() if d.is_dir() and (d / "run.json").is_file()):
        run = RunFolder(run_dir)
        found = fidelity(list(run.records().values()))
        out["pins"][run.source()["name"]] = {env: f.line().split(": ", 1)[1] for env, f in found.items()}
    if code == 0:
        subprocess.run(["rm", "-rf", runs], check=False)
    else:
        out["runs_kept"] = runs  # a matrix that did not exit 0 is kept for a look
    return out


def bench_fidelity_every(pins: list[str]) -> dict:
    """Each pin alone with every runnable environment (`accept --env-set all --no-baseline --no-cache`), one pin
    after another: per release, each replayed environment's fidelity and the release's totals by why the other
    recordings do not reproduce. The run folders are kept: every unexplained mismatch is read from them."""
    from collections import Counter

    from gymgate.report.fidelity import fidelity

    kept = tempfile.mkdtemp(prefix="gg-bench-fidelity-")
    out: dict = {"pins": {}, "runs_kept": kept}
    for pin in pins:
        runs = str(Path(kept) / pin)
        cmd = gymgate("accept", "--gym-ref", pin, "--env-set", "all", "--no-baseline", "--no-cache")
        seconds, text, code = timed(cmd, dict(os.environ, GYMGATE_RUNS=runs))
        if not Path(runs).is_dir() or len([d for d in Path(runs).iterdir() if d.is_dir()]) != 1:
            out["pins"][pin] = {"wall_s": round(seconds, 1), "exit_code": code, "no_run": text[-3000:]}
            continue
        found = fidelity(list(_one_run(runs).records().values()))
        why: Counter = Counter()
        for env in found.values():
            why.update(env.others)
        out["pins"][pin] = {
            "wall_s": round(seconds, 1),
            "exit_code": code,
            "environments": len(found),
            "replays": sum(f.replays for f in found.values()),
            "reproduce": sum(f.reproduce for f in found.values()),
            "why": dict(sorted(why.items())),
            "per_env": {env: f.line().split(": ", 1)[1] for env, f in found.items()},
        }
    return out


def render_fidelity_every(data: dict, command: str) -> str:
    pins = data["fidelity_every"]["pins"]
    lines = [
        "<!-- fidelity:every:begin -->",
        "### Replay fidelity of every runnable environment on every release (issue 28)",
        "",
        f"`{command}` ({data['when']}, {data['host']}): each pin alone, `accept --env-set all --no-baseline",
        "--no-cache`, one after another. Per release: the environments that replayed recordings, how many",
        "reproduce, and why the others do not (a class reviewed in cases/recordings/fidelity.toml; `not replayable",
        "here`: a shape or row gymgate cannot replay, each with its reason; `not judged`: its Gym did not start or",
        "its path is an ERROR; `unexplained`: a failure, read from the run). Every environment's own line:",
        "docs/benchmarks/fidelity-every.json.",
        "",
        "| release | wall | exit | environments | reproduce | the others, by why |",
        "|---|---|---|---|---|---|",
    ]
    for pin, row in pins.items():
        if "no_run" in row:
            lines.append(f"| {pin} | {row['wall_s']:.0f} s | {row['exit_code']} | no run folder: see the json | | |")
            continue
        why = ", ".join(f"{n} {k}" for k, n in row["why"].items()) or "—"
        lines.append(
            f"| {pin} | {row['wall_s']:.0f} s | {row['exit_code']} | {row['environments']} | "
            f"{row['reproduce']}/{row['replays']} | {why} |"
        )
    lines.append("<!-- fidelity:every:end -->")
    return "\n".join(lines)


def bench_all(pin: str, baseline: str | None) -> dict:
    """`accept --env-set all --no-cache` of one ref alone (`--no-baseline`), or, given a baseline, the bump from it:
    wall time, the summed RSS peak of every process the run started (sampled twice a second), the paths'
    outcomes and each environment's replay fidelity. Runs that did not exit 0 are kept for a look."""
    from gymgate.report.fidelity import fidelity

    out: dict = {}
    for label, extra in [("bump", ["--baseline", baseline])] if baseline else [("one ref", ["--no-baseline"])]:
        runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
        done, peak = threading.Event(), [0]
        sampler = threading.Thread(target=_sample_peak, args=(runs, done, peak), daemon=True)
        sampler.start()
        cmd = gymgate("accept", "--gym-ref", pin, "--env-set", "all", "--no-cache", *extra)
        seconds, text, code = timed(cmd, dict(os.environ, GYMGATE_RUNS=runs))
        done.set()
        sampler.join()
        row: dict = {"wall_s": round(seconds, 1), "exit_code": code, "peak_rss_gib": round(peak[0] / 2**30, 2)}
        row["peak_pss_gib"] = round(peak[1] / 2**30, 2)
        row["announced"] = [ln for ln in text.splitlines() if "environments without a case" in ln]
        said = ("**Verdict", "Acknowledged:", "Additive", "recorded rollouts replayed", "Other paths", "- ")
        row["verdicts"] = [ln.strip("*") for ln in text.splitlines() if ln.startswith(said)][-12:]
        for run_dir in sorted(d for d in Path(runs).iterdir() if d.is_dir() and (d / "run.json").is_file()):
            records = list(RunFolder(run_dir).records().values())
            outcomes: dict[str, int] = {}
            for record in records:
                outcomes[record.outcome] = outcomes.get(record.outcome, 0) + 1
            found = fidelity(records)
            row.setdefault("runs", {})[run_dir.name] = {
                "paths": len(records),
                "outcomes": outcomes,
                "environments": len({r.env for r in records}),
                "reproduce": sum(f.reproduce for f in found.values()),
                "replays": sum(f.replays for f in found.values()),
            }
        row["runs_kept"] = runs  # kept whatever the exit: its report is what a reader of the figures asks for
        out[label] = row
    return out


def render_all(pin: str, baseline: str | None, data: dict, command: str) -> str:
    tag = f"all:{baseline}-to-{pin}" if baseline else f"all:{pin}"
    what = f"the bump {baseline} → {pin}" if baseline else f"nemo-gym {pin} alone"
    lines = [
        f"<!-- {tag}:begin -->",
        f"### Every runnable environment, {what} (`--env-set all`, issue 28)",
        "",
        f"`{command}` ({data['when']}, {data['host']}); the memory of every process a run started, summed and",
        "sampled twice a second: PSS (a page shared by forked processes divided among them: what the run holds) and",
        "RSS (such a page counted once per process: an upper bound).",
        "",
        "| run | wall | peak PSS | peak RSS | exit | paths (outcomes) | replays reproduced |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, row in data["all"].items():
        for name, run in row.get("runs", {}).items():
            outcomes = ", ".join(f"{n} {k}" for k, n in sorted(run["outcomes"].items()))
            lines.append(
                f"| {label}: {name} | {row['wall_s']:.0f} s | {row.get('peak_pss_gib', '—')} GiB | "
                f"{row['peak_rss_gib']} GiB | {row['exit_code']} | "
                f"{run['paths']} in {run['environments']} environments ({outcomes}) | "
                f"{run['reproduce']}/{run['replays']} |"
            )
    lines += [f"- {line}" for row in data["all"].values() for line in row.get("verdicts", [])]
    lines.append(f"<!-- {tag}:end -->")
    return "\n".join(lines)


def _verdict_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("== ") and "→" in line]


def render_fidelity(data: dict, command: str) -> str:
    pins = data["fidelity"]["pins"]
    envs = sorted({env for found in pins.values() for env in found})
    lines = [
        "<!-- fidelity:all:begin -->",
        "### Replay fidelity on every release (issue 28)",
        "",
        f"`{command}` ({data['when']}, {data['host']}): `gymgate matrix --no-cache` over every pin, the default set with",
        f"every recording its environments ship replayed ({data['fidelity']['wall_s']:.0f} s, exit "
        f"{data['fidelity']['exit_code']}); per release, how many recordings reproduce and why the rest do not",
        "(classes from cases/recordings/fidelity.toml; `not replayable here`: the recording's row is not shipped;",
        "`not judged`: the environment does not run on that release or its paths are an ERROR there).",
        "",
        "| environment | " + " | ".join(pins) + " |",
        "|---|" + "---|" * len(pins),
    ]
    for env in envs:
        lines.append(f"| {env} | " + " | ".join(pins[p].get(env, "—") for p in pins) + " |")
    lines.append("<!-- fidelity:all:end -->")
    return "\n".join(lines)


def bench_hang(pin: str, repeats: int) -> dict:
    """A structured_outputs verifier that never returns, from the pin's sdist, judged against the pin
    (`accept --env structured_outputs_v4`, default reruns): wall time end to end, the baseline served from the
    cache (stored by a first run), and the deadline each path got."""
    gym = Path(tempfile.mkdtemp(prefix="gg-bench-hang-"))
    unpack(sdist(pin), gym)
    app = gym / "resources_servers" / "structured_outputs" / "app.py"
    line = "        schema_str = body.schema_str\n"
    assert app.read_text().count(line) == 1, "the mutant's line changed upstream"
    app.write_text(app.read_text().replace(line, "        await __import__('asyncio').sleep(10**6)\n" + line))
    runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
    env = dict(os.environ, GYMGATE_RUNS=runs)
    base = gymgate("accept", "--gym-ref", pin, "--no-baseline", "--env", "structured_outputs_v4")
    seconds, text, code = timed(base, env)
    assert code == 0, text
    out: dict = {"wall_s": [], "exit_code": [], "deadline_s": [], "attempts": []}
    for _ in range(repeats):
        argv = gymgate("accept", "--gym-ref", str(gym), "--baseline", pin, "--env", "structured_outputs_v4")
        seconds, text, code = timed(argv, env)
        assert code == 1, text
        run = max((d for d in Path(runs).iterdir() if (d / "results.json").is_file()), key=lambda d: d.stat().st_mtime)
        results = json.loads((run / "results.json").read_text())
        out["wall_s"].append(round(seconds, 3))
        out["exit_code"].append(code)
        out["deadline_s"].append(max(p["candidate"]["timings"].get("deadline_s", 0) for p in results["paths"]))
        out["attempts"].append(max(len(p["attempts"]["candidate"]) for p in results["paths"]))
    subprocess.run(["rm", "-rf", runs, str(gym)], check=False)
    return out


def render_hang(pin: str, data: dict, command: str) -> str:
    runs = data["hang"]
    rows = [
        ("`gymgate accept` of the hanging Gym, end to end (baseline cached)", runs["wall_s"], "s"),
        ("exit code", runs["exit_code"], ""),
        ("each path's deadline (derived from the baseline)", runs["deadline_s"], "s"),
        ("attempts of each path on the candidate (first run + reruns)", runs["attempts"], ""),
    ]
    notes = [
        "Before per-path deadlines every attempt waited the 180 s --path-timeout: about 20 minutes for the same "
        "verdict (issue 21's measurement)."
    ]
    return table(f"hang:{pin}", f"A verifier that never returns, nemo-gym {pin}", data, command, rows, notes)


FAULT_DEADLINE_S = "15"  # the faults bench's --path-timeout: what a fault that hangs a release costs per path


def bench_faults(pins: list[str], repeats: int) -> dict:
    """What each fault does on each release (`accept --faults all --no-baseline`, the default set's environments,
    their case and fault paths): per fault, how Gym handled it in each environment, how many attempts of the failed
    call the endpoint saw, and the path's outcome. Then what the default faults cost the default set on the newest
    pin: `--faults none` against `--faults default`, alternated, `repeats` times each."""
    from gymgate.faults.spec import catalogue

    names = [f.path_name for f in catalogue()[0]]
    out: dict = {"pins": {}, "cost": {}}
    for pin in pins:
        runs = tempfile.mkdtemp(prefix="gg-bench-faults-")
        args = ["accept", "--gym-ref", pin, "--faults", "all", "--no-baseline", "--no-cache", "--no-replays"]
        argv = gymgate(*args, "--path-timeout", FAULT_DEADLINE_S, "--runs-dir", runs)
        seconds, text, code = timed(argv, dict(os.environ))
        assert code in (0, 1), text
        rows: dict = {}
        for record in _one_run(runs).records().values():
            if record.mode not in names:
                continue
            fault = record.fault or {}
            seen = rows.setdefault(record.mode, {})
            seen[record.env] = {
                "outcome": str(record.outcome),
                "handled": fault.get("handled", ""),
                "attempts": fault.get("attempts"),
                "reason": record.reason[:200],
            }
        out["pins"][pin] = {"exit_code": code, "wall_s": round(seconds, 1), "faults": rows}
        subprocess.run(["rm", "-rf", runs], check=False)
    out["cost"], out["cost_pin"] = _selection_cost(pins[-1], "--faults", repeats), pins[-1]
    return out


def _selection_cost(pin: str, option: str, repeats: int) -> dict:
    """What a selection option's default set costs the default set of `pin` (warm, `--no-baseline`): `none`
    against `default`, alternated `repeats` times, each run's wall time and path count."""
    cost: dict = {}
    for _ in range(repeats):
        for selection in ("none", "default"):
            runs = tempfile.mkdtemp(prefix="gg-bench-cost-")
            args = ["accept", "--gym-ref", pin, "--no-baseline", "--no-cache", option, selection, "--runs-dir", runs]
            seconds, text, code = timed(gymgate(*args), dict(os.environ))
            assert code == 0, text
            paths = len(_one_run(runs).records())
            cost.setdefault(selection, []).append({"wall_s": round(seconds, 1), "paths": paths})
            subprocess.run(["rm", "-rf", runs], check=False)
    return cost


def _cost_line(cost: dict, pin: str, what: str, option: str) -> list[str]:
    """The cost of a selection's default set as report lines (none when it was not measured)."""
    if not cost:
        return []
    none = [r["wall_s"] for r in cost["none"]]
    default = [r["wall_s"] for r in cost["default"]]
    return [
        "",
        f"What the default {what} cost the default set (nemo-gym {pin}, warm, `--no-baseline`, alternated): "
        f"`{option} none` {cost['none'][0]['paths']} paths, median {statistics.median(none):.1f} s "
        f"({', '.join(map(str, none))}); `{option} default` {cost['default'][0]['paths']} paths, median "
        f"{statistics.median(default):.1f} s ({', '.join(map(str, default))}): "
        f"×{statistics.median(default) / statistics.median(none):.2f}.",
    ]


def _fault_cell(per_env: dict) -> str:
    """One release's handling of one fault over the environments it applies to (a SKIP: not in that release): the
    handling most of them share, with its attempts, then each environment that differs, named."""
    kinds: dict[str, list[str]] = {}
    for env, seen in sorted(per_env.items()):
        if seen["outcome"] == SKIP:
            continue
        how = seen["handled"] or seen["outcome"]
        how += f" ({seen['attempts']})" if seen["attempts"] is not None else ""
        if seen["outcome"] != "PASS":
            how += f" — **{seen['outcome']}**"
        kinds.setdefault(how, []).append(env)
    if not kinds:
        return "—"
    ordered = sorted(kinds.items(), key=lambda item: -len(item[1]))
    return "; ".join([ordered[0][0], *(f"{', '.join(envs)}: {how}" for how, envs in ordered[1:])])


def render_faults(data: dict, command: str) -> str:
    from gymgate.faults.spec import catalogue

    faults = catalogue()[0]
    pins = list(data["faults"]["pins"])
    lines = [
        "<!-- faults:every:begin -->",
        "### What each fault does, per release",
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Each release's fault paths in the default set's "
        f"environments, one run each (`--path-timeout {FAULT_DEADLINE_S}`). A cell: how Gym handled the fault (absorbed: it tried "
        "again and the path passed every check of the accepted case; reported in the row: the row came back "
        "with a failure marker; reported by /run: /run answered an error status), and in brackets the attempts of "
        "the failed call the endpoint saw. **FAIL** marks a rule broken (acceptance/faulted.py).",
        "",
        "| fault | " + " | ".join(pins) + " |",
        "|---|" + "---|" * len(pins),
    ]
    for fault in faults:
        cells = []
        for pin in pins:
            per_env = data["faults"]["pins"][pin]["faults"].get(fault.path_name, {})
            cells.append(_fault_cell(per_env) if per_env else "—")
        lines.append(f"| `{fault.name}` | " + " | ".join(cells) + " |")
    walls = ", ".join(f"{p} {v['wall_s']} s (exit {v['exit_code']})" for p, v in data["faults"]["pins"].items())
    lines += ["", f"Runs (`--faults all`, `--path-timeout {FAULT_DEADLINE_S}`): {walls}."]
    lines += _cost_line(data["faults"].get("cost"), data["faults"].get("cost_pin"), "faults", "--faults")
    lines.append("<!-- faults:every:end -->")
    return "\n".join(lines)


def bench_variants(pins: list[str], repeats: int, every_env: bool = False) -> dict:
    """Which forms each release's verifiers get wrong (`accept --variants all --no-baseline`, the default set's
    environments, their cases and recordings): per form and environment, how many variant paths ran and which
    disagreed with their original (reviewed known defects among them). Then what the default forms cost the
    default set on the newest pin: `--variants none` against `--variants default`, alternated, `repeats` times.
    `every_env`: every runnable environment instead (`--env-set all`), the default forms only, no cost runs."""
    out: dict = {"pins": {}, "cost": {}, "every_env": every_env}
    selection = (
        ["--env-set", "all", "--variants", "default", "--faults", "none"] if every_env else ["--variants", "all"]
    )
    for pin in pins:
        runs = tempfile.mkdtemp(prefix="gg-bench-variants-")
        args = ["accept", "--gym-ref", pin, *selection, "--no-baseline", "--no-cache", "--runs-dir", runs]
        seconds, text, code = timed(gymgate(*args), dict(os.environ))
        assert code in (0, 1), text
        forms: dict = {}
        ran = [r for r in _one_run(runs).records().values() if PathId(r.path).part("form") and r.outcome != SKIP]
        wrong = disagreements(ran)
        for record in ran:
            seen = forms.setdefault(PathId(record.path).part("form"), {}).setdefault(
                record.env, {"ran": 0, "wrong": [], "known": 0, "unjudged": 0}
            )
            seen["ran"] += 1
            if record.path in wrong:
                seen["wrong"].append(record.mode)
                seen["known"] += 1 if wrong[record.path].known else 0
            elif (record.variant or {}).get("agrees") is not True:
                seen["unjudged"] += 1  # no verdict against its original (an ERROR): neither right nor wrong
        out["pins"][pin] = {"exit_code": code, "wall_s": round(seconds, 1), "forms": forms}
        subprocess.run(["rm", "-rf", runs], check=False)
    if not every_env:
        out["cost"], out["cost_pin"] = _selection_cost(pins[-1], "--variants", repeats), pins[-1]
    return out


def _variant_cell(per_env: dict) -> str:
    """One release's verdicts on one form: how many of its variants ran, the environments whose verifier got some
    wrong (how many; how many of those a reviewed entry knows), and how many could not be judged."""
    ran = sum(seen["ran"] for seen in per_env.values())
    wrong = {env: seen for env, seen in sorted(per_env.items()) if seen["wrong"]}
    unjudged = sum(seen.get("unjudged", 0) for seen in per_env.values())
    tail = f"; {unjudged} not judged" if unjudged else ""
    if not ran:
        return "—"
    if not wrong:
        return f"{ran - unjudged} right{tail}"
    named = ", ".join(f"{env} {len(seen['wrong'])}/{seen['ran']}" for env, seen in wrong.items())
    known = sum(seen.get("known", 0) for seen in wrong.values())
    count = sum(len(s["wrong"]) for s in wrong.values())
    return f"**{count} of {ran} wrong**{f' ({known} known)' if known else ''}: {named}{tail}"


def render_variants(data: dict, command: str) -> str:
    from gymgate.variants.forms import catalogue

    pins = list(data["variants"]["pins"])
    tag, scope = (
        (
            "every-env",
            "every runnable environment (`--env-set all`), their hand-written answers and "
            "the recordings that release ships, the default forms (`--variants default`)",
        )
        if data["variants"].get("every_env")
        else (
            "every",
            "default-set environments, their hand-written answers and the recordings that release ships, "
            "every form of gymgate/variants/forms.toml (`--variants all`)",
        )
    )
    lines = [
        f"<!-- variants:{tag}:begin -->",
        "### Forms the verifiers get wrong, per release" + (", every runnable environment" if tag != "every" else ""),
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Each release's {scope}, one run each. A cell: how "
        "many variant paths of that form ran and, where a verifier came to another verdict than on the original "
        "answer, how many and in which environment (wrong/ran).",
        "",
        "| form | " + " | ".join(pins) + " |",
        "|---|" + "---|" * len(pins),
    ]
    for form in catalogue()[0]:
        cells = [_variant_cell(data["variants"]["pins"][pin]["forms"].get(form.name, {})) for pin in pins]
        if any(c != "—" for c in cells):
            lines.append(f"| `{form.name}` | " + " | ".join(cells) + " |")
    walls = ", ".join(f"{p} {v['wall_s']} s (exit {v['exit_code']})" for p, v in data["variants"]["pins"].items())
    lines += ["", f"Runs: {walls}."]
    lines += _cost_line(data["variants"].get("cost"), data["variants"].get("cost_pin"), "forms", "--variants")
    lines.append(f"<!-- variants:{tag}:end -->")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "what",
        choices=(
            "services",
            "paths",
            "compare",
            "noise",
            "neighbour",
            "cached",
            "matrix",
            "bisect",
            "pins",
            "bump",
            "attempts",
            "hang",
            "replays",
            "startup",
            "fidelity",
            "all",
            "faults",
            "variants",
            "cluster",
        ),
    )
    parser.add_argument("--pin", default="0.4.0")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default="1,auto", help="paths: comma-separated -n settings to compare")
    parser.add_argument("--baseline", default="0.4.0", help="compare: the baseline ref (all: none unless given)")
    parser.add_argument("--env-set", default="default", help="fidelity, variants: `all` for every runnable environment")
    parser.add_argument(
        "--pins", default="", help="fidelity --env-set all, faults, variants: comma-separated pins (default: every)"
    )
    args = parser.parse_args()
    # Every bench but `faults` measures what it always has, without fault paths (the default set gained them with
    # issue 30): the series stay comparable, and the faults bench says what they cost.
    os.environ.setdefault("GYMGATE_FAULTS", "none")
    if args.what != "variants":  # likewise the variant paths (issue 31): the variants bench says what they cost
        os.environ.setdefault("GYMGATE_VARIANTS", "none")
    data = {
        "pin": args.pin,
        "repeats": args.repeats,
        "host": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d"),
    }
    command = f"nox -s bench -- {args.what} --pin {args.pin} --repeats {args.repeats}"
    if args.what == "services":
        data["env"], data["up"] = bench_env(args.pin, args.repeats), bench_up(args.pin, args.repeats)
        section = render_services(args.pin, data, command)
    elif args.what == "bisect":
        data["bisect"] = bench_bisect(args.pin)
        section = render_bisect(args.pin, data, command)
    elif args.what == "cluster":
        data["cluster"] = bench_cluster(args.pin, args.repeats)
        section = render_cluster(args.pin, data, command)
    elif args.what == "matrix":
        data["matrix"] = bench_matrix(args.repeats)
        section = render_matrix(data, command)
    elif args.what == "neighbour":
        data["neighbour"] = bench_neighbour(args.pin, args.repeats)
        section = render_neighbour(args.pin, data, command)
    elif args.what == "cached":
        data["cached"] = bench_cached(args.pin, args.repeats)
        section = render_cached(args.pin, data, command)
    elif args.what == "compare":
        command += f" --baseline {args.baseline}"
        data["compare"] = bench_compare(args.pin, args.baseline, args.repeats)
        section = render_compare(args.pin, args.baseline, data, command)
    elif args.what == "pins":
        command += f" --baseline {args.baseline}"
        data["pins"] = bench_pins(args.pin, args.baseline, args.repeats)
        section = render_pins(args.pin, args.baseline, data, command)
    elif args.what == "bump":
        command += f" --baseline {args.baseline}"
        data["bump"] = bench_bump(args.pin, args.baseline, args.repeats)
        section = render_bump(args.pin, args.baseline, data, command)
    elif args.what == "attempts":
        data["attempts"] = bench_attempts(args.pin, args.repeats)
        section = render_attempts(args.pin, data, command)
    elif args.what == "startup":
        data["startup"] = bench_startup(args.pin, args.repeats)
        section = render_startup(args.pin, data, command)
    elif args.what == "replays":
        data["replays"] = bench_replays(args.pin, args.repeats)
        section = render_replays(args.pin, data, command)
    elif args.what == "fidelity" and args.env_set == "all":
        from gymgate.refs.pins import pins_in_order

        pins = args.pins.split(",") if args.pins else pins_in_order()
        command = "nox -s bench -- fidelity --env-set all" + (f" --pins {args.pins}" if args.pins else "")
        args.what, args.pin = "fidelity", "every"
        data["fidelity_every"] = bench_fidelity_every(pins)
        section = render_fidelity_every(data, command)
    elif args.what == "fidelity":
        command, args.pin = "nox -s bench -- fidelity", "all"
        data["fidelity"] = bench_fidelity()
        section = render_fidelity(data, command)
    elif args.what == "all":
        baseline = args.baseline if "--baseline" in sys.argv else None
        command = f"nox -s bench -- all --pin {args.pin}" + (f" --baseline {baseline}" if baseline else "")
        data["all"] = bench_all(args.pin, baseline)
        section = render_all(args.pin, baseline, data, command)
        args.pin = f"{baseline}-to-{args.pin}" if baseline else args.pin  # the section's tag and json name
    elif args.what in ("faults", "variants"):  # every release, one run each, then the default set's cost
        from gymgate.refs.pins import pins_in_order

        pins = args.pins.split(",") if args.pins else pins_in_order()
        command = f"nox -s bench -- {args.what}" + (f" --pins {args.pins}" if args.pins else "")
        args.pin = "every"
        measure, render = {"faults": (bench_faults, render_faults), "variants": (bench_variants, render_variants)}[
            args.what
        ]
        if args.what == "variants" and args.env_set == "all":
            command, args.pin = command + " --env-set all", "every-env"
            data[args.what] = bench_variants(pins, args.repeats, every_env=True)
        else:
            data[args.what] = measure(pins, args.repeats)
        section = render(data, command)
    elif args.what == "hang":
        data["hang"] = bench_hang(args.pin, args.repeats)
        section = render_hang(args.pin, data, command)
    elif args.what == "noise":
        data["noise"] = bench_noise(args.pin, args.repeats)
        section = render_noise(args.pin, data, command)
    else:
        data["paths"] = bench_paths(args.pin, args.repeats, args.workers.split(","))
        section = render_paths(args.pin, data, command)
    (DOCS / "benchmarks").mkdir(parents=True, exist_ok=True)
    (DOCS / "benchmarks" / f"{args.what}-{args.pin}.json").write_text(json.dumps(data, indent=2) + "\n")
    doc = DOCS / "benchmarks.md"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\nProduced by `nox -s bench`; never by timed tests.\n"
    tag = re.escape(f"{args.what}:{args.pin}")
    pattern = re.compile(rf"<!-- {tag}:begin -->.*?<!-- {tag}:end -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    doc.write_text(text)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
