"""The dispatch's process: `python -m gymgate.remote.driver REQUEST RESULT`, run with an interpreter that has the
cluster's own Ray (the harness has none, and a Ray driver must match the cluster's Ray and Python). It connects to
the cluster in a namespace of its own, runs the request's units (remote/dispatch.py), and writes what happened to
RESULT as JSON; the run folders themselves are already in the caller's copies by then.

SIGINT or SIGTERM (the caller's Ctrl-C, a CI cancel) stops every unit within its bound; a second one kills their
actors at once. Exit codes: 0 every unit ran to its end (whatever its verdict), 2 anything else."""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gymgate.remote import dispatch
from gymgate.remote.plan import Unit


@dataclass
class Request:
    address: str  # what ray.init accepts: ray://host:10001, host:6379, auto
    units: list[dict]  # each a Unit.to_json()
    checkout_digest: str
    checkout_pack: str  # a file holding the packed checkout (remote/transfer.py)
    into: dict[str, str]  # unit label -> the caller's run folder its run streams into
    sources: dict[str, str] = field(default_factory=dict)  # a packed Gym source's digest -> the file holding it
    namespace: str = ""
    num_cpus: float = 1
    memory: int = 0
    cache: str = ""  # where nodes keep checkouts and environments (none: each node's own)
    scratch: str = "/tmp/gymgate-units"
    program: list[str] = field(default_factory=list)  # a stand-in for gymgate (tests); none: gymgate itself
    environ: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Request:
        return cls(**json.loads(path.read_text()))

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    def unit_list(self) -> list[Unit]:
        return [Unit.from_json(u) for u in self.units]


def main(argv: list[str]) -> int:
    import ray

    request, result_file = Request.read(Path(argv[0])), Path(argv[1])
    signals: list[int] = []

    def stop(signum, frame):
        signals.append(signum)
        if len(signals) > 1:
            raise KeyboardInterrupt  # a second one: the actors are killed now (owner fate-sharing does the rest)

    def listen() -> None:
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)

    listen()  # a stop during ray.init is not lost
    os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"  # the units' commands choose their own environments
    ray.init(
        address=request.address,
        namespace=request.namespace or dispatch.namespace(),
        log_to_driver=False,
        # The cluster's Python has Ray, not gymgate: the units' actors import this package as shipped by Ray
        # (content-addressed in the cluster's store, once per version of it).
        runtime_env={"py_modules": [str(Path(dispatch.__file__).resolve().parents[1])]},
    )
    # ray.init put Ray's own failure handler on SIGTERM (it logs a stack trace from inside the handler, and hung
    # the driver's stop once in ~10 under load); the stop signals go to the handler above alone.
    listen()
    try:
        done = dispatch.run_units(
            request.unit_list(),
            (request.checkout_digest, Path(request.checkout_pack).read_bytes()),
            lambda unit: Path(request.into[unit.label]),
            {key: Path(pack).read_bytes() for key, pack in request.sources.items()},
            cache=request.cache,
            scratch=request.scratch,
            num_cpus=request.num_cpus,
            memory=request.memory,
            program=request.program or None,
            stopping=lambda: bool(signals),
            environ=request.environ,
        )
    finally:
        ray.shutdown()
    result_file.write_text(json.dumps(asdict(done), indent=1))
    finished = all(outcome == dispatch.DONE for outcome in done.outcomes.values())
    return 0 if finished and not signals else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
