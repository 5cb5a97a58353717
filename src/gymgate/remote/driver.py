"""The dispatch's process: `python -m gymgate.remote.driver REQUEST RESULT`, run with an interpreter that has the
cluster's own Ray (the harness has none, and a Ray driver must match the cluster's Ray and Python). It connects to
the cluster in a namespace of its own, runs the request's units (remote/dispatch.py), and writes what happened to
RESULT as JSON; the run folders themselves are already in the caller's copies by then.

SIGINT or SIGTERM (the caller's Ctrl-C, a CI cancel) stops every unit within its bound; a second one kills their
actors at once. A cluster that refuses the driver's token, or cannot be reached, is said in RESULT (`connect`) before
anything is placed. Exit codes: 0 every unit ran to its end (whatever its verdict), 2 anything else."""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gymgate.remote import auth, dispatch
from gymgate.remote.units import Unit


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


# What RESULT says instead of the units' outcomes when the driver never joined the cluster: {"connect": kind, "detail":
# Ray's words}, written by connect_result and read by connect_failure.
REFUSED, UNREACHABLE = "refused", "unreachable"


def connect_result(kind: str, detail: str) -> dict[str, str]:
    return {"connect": kind, "detail": detail}


def connect_failure(result: dict) -> tuple[str, str] | None:
    """(kind, detail) of a RESULT whose driver never joined the cluster; None for units' outcomes."""
    return (result["connect"], result["detail"]) if "connect" in result else None


def connect_problem(address: str) -> tuple[str, str] | None:
    """The cluster at a GCS address (HOST:PORT) turns this driver away (REFUSED) or does not answer (UNREACHABLE),
    asked before ray.init, which retries a refused token for 20 s and then only says it failed to connect. Ray's own
    message, which names where a token may lie, never the token, comes back as the detail. A cluster that asks for a
    token, when the user set no RAY_AUTH_MODE and has one where Ray looks, is asked again with token auth on (Ray
    turns it on by itself only for a cluster it finds on the machine, never for an address it is given; and it is not
    on from the start: a driver that sends a token to a cluster without token auth has its actors die at start,
    measured on Ray 2.59). None: the cluster accepted, or the address is one this check does not ask (ray://, auto),
    or this Ray has no such check (ray.init then decides)."""
    if address.startswith("ray://") or address in ("auto", "local"):
        return None
    try:
        from ray._raylet import GcsClient  # noqa: PLC0415 - pin environment only (Ray)
        from ray.exceptions import AuthenticationError, RpcError  # noqa: PLC0415 - pin environment only (Ray)
    except ImportError:
        return None

    def ask() -> tuple[str, str] | None:
        try:
            GcsClient(address=address)
        except AuthenticationError as exc:
            return REFUSED, str(exc)
        except RpcError as exc:
            return UNREACHABLE, str(exc)
        except Exception:  # noqa: BLE001 - a Ray whose client differs: ray.init decides
            return None
        return None

    problem = ask()
    if problem is not None and problem[0] == REFUSED and _token_auth_turned_on():
        problem = ask()
    return problem


def _token_auth_turned_on() -> bool:
    """Token auth on for this driver when the user set no RAY_AUTH_MODE and a token lies where Ray looks (Ray's own
    switch, the one ray.init makes for a cluster it found on the machine); False otherwise, or in a Ray without it."""
    if auth.MODE in os.environ:
        return False
    try:
        from ray._private.authentication.authentication_token_setup import (  # noqa: PLC0415 - pin environment only (Ray)
            maybe_enable_token_auth_if_token_available as turn_on,
        )
    except ImportError:
        return False
    return bool(turn_on(warn_if_disabled=False))


def _connect(ray, request: Request) -> tuple[str, str] | None:
    """ray.init into the dispatch's namespace; a refusal or an unreachable cluster is returned, never raised."""
    problem = connect_problem(request.address)
    if problem is not None:
        return problem
    refused = getattr(ray.exceptions, "AuthenticationError", ())  # a Ray before token authentication has none
    try:
        ray.init(
            address=request.address,
            namespace=request.namespace or dispatch.namespace(),
            log_to_driver=False,
            # The cluster's Python has Ray, not gymgate: the units' actors import this package as shipped by Ray
            # (content-addressed in the cluster's store, once per version of it).
            runtime_env={"py_modules": [str(Path(dispatch.__file__).resolve().parents[1])]},
        )
    except refused as exc:
        return REFUSED, str(exc)
    except ConnectionError as exc:
        return UNREACHABLE, str(exc)
    return None


def main(argv: list[str]) -> int:
    import ray  # noqa: PLC0415 - pin environment only (Ray)

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
    problem = _connect(ray, request)
    if problem is not None:
        result_file.write_text(json.dumps(connect_result(*problem), indent=1))
        return 2
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
