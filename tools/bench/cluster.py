"""The cluster bench: what a unit costs on a local two-node Ray cluster (tools/local_cluster.py) beyond the run it
carries, a two-pin matrix there, and an estimate of the every-environment matrix on more nodes."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from gymgate.runfolder import RunFolder

from .common import DOCS, REPO, gymgate, median, table, timed


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
