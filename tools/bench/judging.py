"""Benches of judging: a bump judged (compare), identical runs compared (noise), the pin matrix (matrix), a bisect
(bisect), a verifier that never returns (hang), and the replay fidelity of every release (fidelity)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.refs.scratch import commit_all, git
from gymgate.runfolder import RunFolder

from .common import gymgate, median, one_run, table, timed


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
        found = fidelity(list(one_run(runs).records().values()))
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
