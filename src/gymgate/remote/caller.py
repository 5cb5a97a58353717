"""The harness's side of a dispatch (the harness has no Ray): pack the checkout, write the request, start the driver
(`python -m gymgate.remote.driver`) with an interpreter that has the cluster's own Ray, pass Ctrl-C and SIGTERM on
to it, and read back what happened to each unit. Each unit's run folder streams into the caller's folder for it
meanwhile."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gymgate.errors import InfraError, UsageError
from gymgate.locations import child_package
from gymgate.remote import auth
from gymgate.remote.dispatch import STOP_GRACE_S
from gymgate.remote.driver import REFUSED, Request, connect_failure
from gymgate.remote.transfer import checkout_pack
from gymgate.remote.units import Unit

DISPATCH_TIMEOUT_S = 12 * 3600.0  # the longest a whole dispatch may take (every unit has its own bounds inside)
STOP_BOUND_S = STOP_GRACE_S + 90.0  # the driver's own stop: each unit's stop, then its actors killed


@dataclass
class Outcome:
    """What the driver reported: per unit, how it ended (dispatch.DONE/UNJUDGED/STOPPED), why, where, its code."""

    outcomes: dict[str, str]
    reasons: dict[str, str]
    nodes: dict[str, str]
    codes: dict[str, int]
    exit_code: int

    def ran_as(self, unit: Unit) -> str:
        """The name of the unit's last attempt the driver reported (its second, when it ran again)."""
        again = unit.again().name
        return again if again in self.outcomes else unit.name


def run_dispatch(
    address: str,
    ray_python: str,
    units: list[Unit],
    into: dict[str, Path],
    sources: dict[str, bytes] | None = None,
    *,
    timeout_s: float = DISPATCH_TIMEOUT_S,
    **request: object,
) -> Outcome:
    """Send `units` to the cluster at `address` and wait (at most `timeout_s`) for the driver to end. A Ctrl-C or
    SIGTERM here stops the dispatch (every unit stopped within its bound) and is raised again once it has. `into`:
    each unit's label -> the folder its run folder streams into; `sources`: packed Gym sources by digest. A cluster
    that refuses the user's token is a UsageError, one that cannot be reached an InfraError (both before any unit
    is placed)."""
    misconfigured = auth.misconfigured(os.environ)
    if misconfigured:
        raise UsageError(misconfigured)
    with tempfile.TemporaryDirectory(prefix="gymgate-dispatch-") as scratch:
        digest, blob = checkout_pack()
        packed = Path(scratch) / "checkout.tar.gz"
        packed.write_bytes(blob)
        wanted = [unit.to_json() for unit in units]
        folders = {label: str(folder) for label, folder in into.items()}
        packs = {}
        for key, data in (sources or {}).items():
            packs[key] = str(Path(scratch) / f"source-{key}.tar.gz")
            Path(packs[key]).write_bytes(data)
        asked = Request(address, wanted, digest, str(packed), folders, packs, **request)  # type: ignore[arg-type]
        result = Path(scratch) / "result.json"
        driver = subprocess.Popen(
            [ray_python, "-m", "gymgate.remote.driver", str(asked.write(Path(scratch) / "request.json")), str(result)],
            env={**os.environ, "PYTHONPATH": str(child_package().parent)},
            start_new_session=True,  # the terminal's Ctrl-C reaches it through us, once, in order
        )
        code = _wait(driver, timeout_s)
        if not result.is_file():
            raise InfraError(f"the dispatch's driver ended ({code}) without saying what its units did")
        found = json.loads(result.read_text())
    failed = connect_failure(found)
    if failed is not None:
        if failed[0] == REFUSED:
            raise UsageError(auth.refusal(address, os.environ))
        raise InfraError(f"the Ray cluster at {address} did not answer: {failed[1]}")
    return Outcome(found["outcomes"], found["reasons"], found["nodes"], found["codes"], code)


def _wait(driver: subprocess.Popen, timeout_s: float) -> int:
    try:
        return driver.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(driver)
        raise InfraError(f"the dispatch did not end within {timeout_s:g} s; its units were stopped") from None
    except KeyboardInterrupt:
        _stop(driver)
        raise


def _stop(driver: subprocess.Popen) -> None:
    """SIGTERM: each unit's own stop; past its bound a second signal (actors killed at once); then the driver."""
    for signum, bound in ((signal.SIGTERM, STOP_BOUND_S), (signal.SIGINT, 60.0)):
        with contextlib.suppress(ProcessLookupError):
            driver.send_signal(signum)
        try:
            driver.wait(timeout=bound)
            return
        except subprocess.TimeoutExpired:
            continue
    driver.kill()
    driver.wait(timeout=30)
