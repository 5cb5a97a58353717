"""Benches of environments and services: building an environment cold and reusing it, every Gym service of a pin up
and stopped (services), an environment built from a neighbour (neighbour), a cached accept through nox (cached), and
a bump from a cold gymgate cache: where its time goes (bump)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.runfolder import RunFolder

from .common import gymgate, median, sample_peak, table, timed


def bench_services(pin: str, repeats: int) -> dict:
    """Two of data's entries: the environment built and reused (env), the services up and stopped (up)."""
    return {"env": bench_env(pin, repeats), "up": bench_up(pin, repeats)}


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

            sampler = threading.Thread(target=sample_peak, args=(runs, done, peak), daemon=True)
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
