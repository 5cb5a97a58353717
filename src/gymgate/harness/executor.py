"""Where a command's runs of refs run: here, one after another (harness/run.py), or each as a unit on a Ray cluster,
all at once (harness/cluster.py, with --ray-address). Every command that runs a ref asks this seam; nothing below it
chooses, so no command can run a ref here that the user sent to a cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from gymgate.harness.cluster import run_remote
from gymgate.harness.run import run_here
from gymgate.harness.run_options import RefRun, RunOptions
from gymgate.refs.source import GymSource
from gymgate.results import RunResult


class Executor(Protocol):
    def run(self, calls: Sequence[RefRun]) -> list[RunResult]:
        """Every call's result, in the calls' order."""
        ...


class Here:
    """One run after another on this machine."""

    def run(self, calls: Sequence[RefRun]) -> list[RunResult]:
        results = []
        for call in calls:
            if call.title:
                print(f"== {call.title}", flush=True)
            results.append(
                run_here(
                    call.source,
                    call.expected,
                    call.opts,
                    reuse=call.reuse,
                    run_dir=call.run_dir,
                    narrowed=call.narrowed,
                )
            )
        return results


class OnCluster:
    """Every run at once, each a unit on a node of the cluster the options name."""

    def run(self, calls: Sequence[RefRun]) -> list[RunResult]:
        return run_remote(calls)


def executor(opts: RunOptions) -> Executor:
    return OnCluster() if opts.ray_address else Here()


def run_refs(calls: Sequence[RefRun]) -> list[RunResult]:
    """Every call's result, in order, where the (first call's) options say refs run."""
    return executor(calls[0].opts).run(calls) if calls else []


def run_ref(source: GymSource, expected: list[str], opts: RunOptions, **where: Any) -> RunResult:
    """One run of `source` where the options say refs run; `where`: RefRun's own fields (reuse, run_dir, narrowed).
    harness/run.run_here has the steps."""
    return run_refs([RefRun(source, expected, opts, **where)])[0]
