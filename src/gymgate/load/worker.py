"""A ref's load worker, run inside the ref's pin environment by the harness (load/child.py): it starts the ref's Gyms
(its own Ray cluster, endpoint and launcher), says `ready`, then runs each command the harness sends on stdin until
`stop` or end of input, and stops everything it started (on success, failure, Ctrl-C or SIGTERM).

`<pin-env>/bin/python -m gymgate.load.worker --run-dir D --env mcqa --ref-label A`"""

from __future__ import annotations

import os

from gymgate.processes import RUN_ENVIRONMENT

os.environ.update(RUN_ENVIRONMENT)  # before anything imports Ray

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

from gymgate.acceptance.setup import shared_setup  # noqa: E402
from gymgate.cases.named import load_environments  # noqa: E402
from gymgate.endpoint.server import ModelEndpoint, Sampling  # noqa: E402
from gymgate.errors import EXIT_OK, EXIT_UNJUDGED  # noqa: E402
from gymgate.kinds import planfile  # noqa: E402
from gymgate.load import protocol  # noqa: E402
from gymgate.load.driver import LoadDriver  # noqa: E402
from gymgate.options import UP, add_session_options  # noqa: E402
from gymgate.processes import RUN_MARKER, run_temp_dir  # noqa: E402
from gymgate.recordings.read import LocalFiles  # noqa: E402
from gymgate.runfolder import RunFolder  # noqa: E402
from gymgate.runner.path import GENERATION  # noqa: E402
from gymgate.services import gym_compat  # noqa: E402
from gymgate.services.launcher import heapprobe  # noqa: E402
from gymgate.services.launcher import service as launcher_service  # noqa: E402
from gymgate.services.ray_cluster import private_ray  # noqa: E402
from gymgate.session.worker import WorkerSession, honour_sigint  # noqa: E402


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def say(data: dict) -> None:
    sys.stdout.write(protocol.answer_line(data))
    sys.stdout.flush()


def serve(driver: LoadDriver) -> None:
    """Answer commands until `stop` or the end of input; a command that raises is answered with its error."""
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        op = command.get("op")
        try:
            if op == protocol.STOP:
                return
            if op == protocol.ALONE:
                say({"op": op, **driver.alone(command["env"], command["deadline_s"])})
            elif op == protocol.ROUND:
                args = (command[k] for k in ("env", "level", "round", "waves", "deadline_s"))
                more = {k: command[k] for k in ("latency", "probe_s") if k in command}
                say({"op": op, **driver.round(*args, **more)})
            elif op == protocol.SATURATED:
                args = (command["envs"], command["level"], command["saturation"], command["deadline_s"])
                say({"op": op, **driver.saturated(*args)})
            elif op == protocol.CONFIRM:
                args = (command["env"], command["fields"], command["runs"], command["deadline_s"])
                say({"op": op, **driver.confirm(*args)})
            elif op == protocol.USAGE:
                time.sleep(float(command.get("settle_s", 0)))
                say({"op": op, "env": command["env"], "usage": driver.usage(command["env"])})
            else:
                say({"op": op, "error": f"unknown command {op!r}"})
        except Exception as exc:  # noqa: BLE001 - answered: the harness decides what a failed command means
            say({"op": op, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gymgate.load.worker")
    add_session_options(parser.add_argument, UP)
    parser.add_argument("--ref-label", required=True, help="which side of the comparison this ref is (tags say it)")
    parser.add_argument("--envs-per-gym", dest="share", type=int, default=8)
    parser.add_argument("--group", type=int, required=True, help="GRPO group size (load/sweep.toml)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    honour_sigint()
    run = RunFolder(Path(args.run_dir))
    run_id = os.environ.get(RUN_MARKER) or "adhoc"
    environments = load_environments(args.envs, gym=LocalFiles(gym_compat.gym_root()))
    specs = planfile.read(run.plan() or [], environments)
    try:
        with contextlib.ExitStack() as stack:
            # each server the launcher forks answers what its heap holds there (heapprobe.py; the leak oracle): the
            # run's short, marked temp folder (AF_UNIX paths are bounded; a killed worker's is removed as stale)
            heap_dir = run_temp_dir("heap-")
            stack.callback(shutil.rmtree, heap_dir, ignore_errors=True)
            os.environ[heapprobe.VARIABLE] = str(heap_dir)
            zygote = stack.enter_context(launcher_service.serving(run.launcher_log))
            gcs = stack.enter_context(private_ray(run_id, namespace=f"gymgate-{run_id}"))
            if zygote is not None:
                zygote.wait_ready()
            tokenizer, _ = shared_setup(run, environments, gym_compat.gym_root())
            endpoint = stack.enter_context(ModelEndpoint(Sampling(GENERATION.temperature, GENERATION.top_p), tokenizer))
            session = WorkerSession(
                run,
                f"load-{args.ref_label}",
                gcs,
                environments,
                endpoint.base_url,
                tokenizer=tokenizer,
                spinup_timeout_s=args.spinup_timeout,
                stop_timeout_s=args.stop_timeout,
                share=args.share,
            )
            stack.callback(session.stop)
            began = time.monotonic()
            session.launch([e.name for e in environments])
            statuses = session.wait_all()
            driver = LoadDriver(
                args.ref_label,
                endpoint,
                statuses,
                session.fleet.handles,
                tokenizer,
                gym_compat.gym_root(),
                args.group,
                watch=session.fleet.watch,
            )
            driver.admit(specs)
            say(
                {
                    "op": protocol.READY,
                    "seconds": round(time.monotonic() - began, 2),
                    "gym": gym_compat.gym_version(),
                    "statuses": {k: {"status": str(v.status), "reason": v.reason} for k, v in statuses.items()},
                    "paths": {env: [p.id for p in paths] for env, paths in driver.paths.items()},
                    "unloadable": driver.unloadable,
                }
            )
            serve(driver)
    except KeyboardInterrupt:
        print("load worker interrupted: everything it started has been stopped", file=sys.stderr, flush=True)
        return 130
    except Exception as exc:  # noqa: BLE001 - said on stdout too: the harness waits for an answer
        say({"op": protocol.READY, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]})
        return EXIT_UNJUDGED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
