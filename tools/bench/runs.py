"""Benches of one run's cost: the paths of a pin per worker setting (paths), two pins alternated (pins), the second
attempt of every path (attempts), the replayed recordings (replays), and every runnable environment of a ref or a
bump, with its memory (all)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path

from gymgate.runfolder import RunFolder

from .common import gymgate, median, one_run, sample_peak, table, timed


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
            sampler = threading.Thread(target=sample_peak, args=(runs, done, peak), daemon=True)
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
            run = one_run(runs)
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
            records = list(one_run(runs).records().values())
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
            records = list(one_run(runs).records().values())
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


def bench_all(pin: str, baseline: str | None) -> dict:
    """`accept --env-set all --no-cache` of one ref alone (`--no-baseline`), or, given a baseline, the bump from it:
    wall time, the summed RSS peak of every process the run started (sampled twice a second), the paths'
    outcomes and each environment's replay fidelity. Runs that did not exit 0 are kept for a look."""
    from gymgate.report.fidelity import fidelity

    out: dict = {}
    for label, extra in [("bump", ["--baseline", baseline])] if baseline else [("one ref", ["--no-baseline"])]:
        runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
        done, peak = threading.Event(), [0]
        sampler = threading.Thread(target=sample_peak, args=(runs, done, peak), daemon=True)
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
