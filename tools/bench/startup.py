"""The startup bench: where a default-set run's CPU goes, by kind of process (Gym's servers by kind, Ray, the
harness), with each way of starting Gym, alternated; each launcher's run compared with Gym's own launch."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from .common import gymgate, median, one_run, run_processes, table, timed

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
    while not done.is_set():
        for entry in run_processes(runs):
            try:
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
            records = list(one_run(runs).records().values())
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
    baseline, candidate = one_run(baseline_runs).root, one_run(candidate_runs).root
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
