"""Entry point run *inside* a pin's environment: start the run's Ray cluster and every acceptance
environment's Gym, probe each server, then stop everything (on success, failure, Ctrl-C or SIGTERM).

Invoked by the harness as `<pin-env>/bin/python -m gymgate.session.up ...`; prints one line per
environment and writes services.json into the run folder. Exit: 0 all present environments ready,
1 one failed, 2 infrastructure (Ray could not start).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from gymgate.processes import RUN_ENVIRONMENT

# Ray reads some of these at import time (loopback node IP), so they are set before anything imports it.
os.environ.update(RUN_ENVIRONMENT)

from gymgate.cases.named import load_environments  # noqa: E402
from gymgate.endpoint.server import ModelEndpoint, Sampling  # noqa: E402
from gymgate.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNJUDGED  # noqa: E402
from gymgate.options import UP, add_session_options  # noqa: E402
from gymgate.outcomes import EnvState  # noqa: E402
from gymgate.processes import RUN_MARKER  # noqa: E402
from gymgate.recordings.read import LocalFiles
from gymgate.runfolder import EnvStatus, RunFolder  # noqa: E402
from gymgate.runner.path import GENERATION  # noqa: E402
from gymgate.services import gym_compat
from gymgate.services.launcher import service as launcher_service  # noqa: E402
from gymgate.services.ray_cluster import private_ray  # noqa: E402
from gymgate.session.worker import WorkerSession, honour_sigint  # noqa: E402


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def print_status(status: EnvStatus) -> None:
    servers = f"{len(status.servers)} servers" if status.servers else ""
    line = f"  {status.status:<8} {status.env:<48} {servers:<11} {status.seconds:6.1f}s"
    if status.reason:
        line += "  " + status.reason.splitlines()[0]
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gymgate.session.up")
    add_session_options(parser.add_argument, UP)
    parser.add_argument(
        "--policy-base-url", help="a model endpoint to point Gym at (default: gymgate's own endpoint, started here)"
    )
    args = parser.parse_args(argv)
    if not args.run_dir:
        parser.error("--run-dir is required")
    args.run_dir = Path(args.run_dir)

    signal.signal(signal.SIGTERM, _raise_interrupt)
    honour_sigint()
    run_id = os.environ.get(RUN_MARKER) or "adhoc"

    environments = load_environments(args.envs, gym=LocalFiles(gym_compat.gym_root()))
    args.run_dir.mkdir(parents=True, exist_ok=True)
    run = RunFolder(args.run_dir)
    record: dict = {"run_id": run_id, "started": time.time(), "complete": False, "environments": {}}
    session = None
    began = time.monotonic()
    code = EXIT_OK
    try:
        with contextlib.ExitStack() as stack:
            zygote = stack.enter_context(launcher_service.serving(run.launcher_log))  # before Ray
            gcs = stack.enter_context(private_ray(run_id, namespace=f"gymgate-{run_id}"))
            if zygote is not None:
                zygote.wait_ready()
            print(
                f"Ray cluster {gcs} (namespace gymgate-{run_id}); starting {len(environments)} environments", flush=True
            )
            endpoint = stack.enter_context(ModelEndpoint(Sampling(GENERATION.temperature, GENERATION.top_p)))
            session = WorkerSession(
                run,
                "up",
                gcs,
                environments,
                args.policy_base_url or endpoint.base_url,
                spinup_timeout_s=args.spinup_timeout,
                stop_timeout_s=args.stop_timeout,
                on_status=print_status,
            )
            try:
                session.launch([e.name for e in environments])
                statuses = session.wait_all()
                record["ready_seconds"] = round(time.monotonic() - began, 2)
                record["environments"] = {k: v.to_json() for k, v in statuses.items()}
                if any(s.status == EnvState.FAILED for s in statuses.values()):
                    code = EXIT_FAILED
            finally:
                stop_began = time.monotonic()
                errors = session.stop()
                record["stop_seconds"] = round(time.monotonic() - stop_began, 2)
                record["stop_errors"] = errors
                for env, problems in errors.items():  # the lifecycle check: a Gym that did not stop in its bound
                    print(f"  lifecycle {env}: did not stop within its bound, killed: {problems[0]}", flush=True)
                    code = EXIT_FAILED
        record["complete"] = True
    except KeyboardInterrupt:
        print("interrupted: everything this run started has been stopped", file=sys.stderr, flush=True)
        code = EXIT_INTERRUPTED
    except Exception as exc:  # Ray itself could not start: nothing was judged
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        code = EXIT_UNJUDGED
    finally:
        record["finished"] = time.time()
        run.write_up_record(record)
    statuses = session.fleet.statuses if session is not None else {}
    ready = sum(1 for s in statuses.values() if s.status == EnvState.READY)
    print(
        f"{ready}/{len(environments)} environments ready in {record.get('ready_seconds', 0)} s; "
        f"stopped in {record.get('stop_seconds', 0)} s",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
