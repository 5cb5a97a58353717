"""`gymgate merge` and `gymgate shard-costs`: the shard runs of `accept --shard K/N` combined into one run per ref
(and compared, given two refs), and the measured costs shards are balanced by."""

from __future__ import annotations

from pathlib import Path

from gymgate import streams
from gymgate.compare.acks import Reviews
from gymgate.compare.alone import judge_run
from gymgate.errors import EXIT_OK, UsageError
from gymgate.harness.reports import compare_and_report
from gymgate.report.outputs import read_summary
from gymgate.report.summary import print_summary, run_document
from gymgate.runfolder import RunFolder
from gymgate.runfolder import runs_dir as default_runs_dir
from gymgate.shards.merge import baseline_of, gather, merge, point_reruns_at
from gymgate.shards.split import costs_file, measured_costs, measured_path_costs, render_costs


def merge_command(runs: list[Path], runs_dir: Path | None, verbose: bool, acks: Reviews) -> tuple[int, dict]:
    """`gymgate merge`: one merged run per ref; given two refs, their comparison's verdict (and document)."""

    sets = gather(runs)
    if len(sets) > 2:
        raise UsageError(f"runs of {len(sets)} refs given ({', '.join(s.ref for s in sets)}): merge one or two at once")
    ordered = baseline_of(sets) if len(sets) == 2 else (sets[0],)
    base = runs_dir or default_runs_dir()
    merged = [merge(shard_set, base) for shard_set in ordered]
    for shard_set, run in zip(ordered, merged, strict=True):
        print(f"merged {len(shard_set.runs)} shards of {shard_set.ref}: {run.root}", flush=True)
    if len(merged) == 1:
        judged = judge_run(merged[0], merged[0].mark().pytest_exit or 0)
        print_summary(judged, merged[0], streams.view())
        return judged.code, run_document(judged, merged[0])
    baseline, candidate = merged
    point_reruns_at(candidate, baseline)
    code = compare_and_report(baseline.root, candidate.root, candidate.root, full=verbose, acks=acks)
    return code, read_summary(candidate.root)


def shard_costs_command(runs: list[Path], write: bool) -> int:
    """`gymgate shard-costs`: each environment's measured cost from stored runs, printed or written."""

    folders = [RunFolder(r) for r in runs]
    costs = measured_costs(folders)
    if not costs:
        raise UsageError("no environment of these runs started and ran a path: nothing to measure")
    text = render_costs(costs, measured_path_costs(folders), [r.name for r in runs])
    if write:
        costs_file().parent.mkdir(parents=True, exist_ok=True)
        costs_file().write_text(text)
        print(f"wrote {costs_file()}")
    else:
        print(text, end="")
    return EXIT_OK
