"""`accept --load`: the bump's two refs under RL's load (gymgate.load), after the acceptance comparison; its verdict
is its own category in the exit code (a regression under load fails the gate like any other)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gymgate import streams
from gymgate.compare import acks as ack_files
from gymgate.harness.load_cluster import load_on_cluster
from gymgate.harness.run import prepare
from gymgate.harness.run_options import RunOptions
from gymgate.load.interleave import LoadRun, run_load
from gymgate.load.measures import BASELINE, CANDIDATE
from gymgate.load.report import verdict_lines
from gymgate.runfolder import new_run_id, runs_dir
from gymgate.verdict import combined_exit


def judge_load(
    baseline, candidate, envs: list[str], opts: RunOptions, acks: ack_files.Reviews | None = None
) -> LoadRun:
    """Both refs' environments (built or reused), then the interleaved load run, its verdict printed. `acks`: whose
    reviews apply (default: gymgate's shipped acks/); this pair's `[[load]]` entries apply. With
    `opts.ray_address`, as units on that cluster (harness/load_cluster.py)."""
    reviewed = ack_files.load_acks((acks or ack_files.Reviews()).steps(), baseline.to_json(), candidate.to_json())
    out = (opts.runs_dir or runs_dir()) / f"{candidate.name}-load-{new_run_id()}".replace("/", "_")
    print(f"load run: {out}", flush=True)
    sources = {BASELINE: baseline, CANDIDATE: candidate}
    if opts.ray_address:  # units on the cluster, both refs of each on one node; judged here
        run = load_on_cluster(sources, envs, opts, out, reviewed)
    else:
        prepared = {BASELINE: prepare(baseline, opts.wide), CANDIDATE: prepare(candidate, opts.wide)}
        run = run_load(sources, prepared, envs, opts, out, reviewed)
    print("\n".join(verdict_lines(run.verdict)), file=streams.view())
    print(f"load report: {run.folder / 'report.md'}", file=streams.view(), flush=True)
    return run


def with_load(code: int, document: dict[str, Any], run: LoadRun) -> tuple[int, dict[str, Any]]:
    """The command's exit code and verdict document with the load verdict in: a regression either way fails (1)."""
    combined = combined_exit(code, run.verdict.code)
    return combined, {**document, "load": {"folder": str(Path(run.folder)), **run.verdict.to_json()}}
