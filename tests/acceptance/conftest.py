"""The acceptance matrix as a pytest session inside a pin's environment, fanned out over xdist workers.

- The controller (the xdist master, or the only process without xdist) starts the run's Ray cluster on
  loopback and hands its address to the workers; it stops it at the end.
- Each worker connects in its own namespace, runs its own model endpoint, and starts the Gyms of the
  environments the plan gives it, all at once; an environment's paths are scheduled to its owner
  (gymgate.parallel.schedule), so each Gym starts once per run.
- Per-run setup shared by the workers (tokenizer artifact, example-row hashes) is produced once, under
  a file lock in the run folder, by whichever worker gets there first.
`gymgate accept` runs this; so can a person: `<pin-env>/bin/python -m pytest tests/acceptance --run-dir runs/x`.
"""

from __future__ import annotations

import os

from gymgate.services.ray_cluster import RUN_ENVIRONMENT

os.environ.update(RUN_ENVIRONMENT)  # before anything imports Ray

import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from gymgate.acceptance.path import GENERATION, PATH_TIMEOUT_S, RunContext  # noqa: E402
from gymgate.acceptance.record import stub_record  # noqa: E402
from gymgate.acceptance.setup import shared_setup  # noqa: E402
from gymgate.atomic import write_json_atomic  # noqa: E402
from gymgate.catalog import load_environments  # noqa: E402
from gymgate.model.endpoint import ModelEndpoint, Sampling  # noqa: E402
from gymgate.outcomes import ERROR, HARNESS  # noqa: E402
from gymgate.parallel.plan import owned_by  # noqa: E402
from gymgate.services import gym_compat  # noqa: E402
from gymgate.services.fleet import Fleet  # noqa: E402
from gymgate.services.lifecycle import SHUTDOWN_TIMEOUT_S  # noqa: E402
from gymgate.services.processes import RUN_MARKER, sweep  # noqa: E402
from gymgate.services.ray_cluster import private_ray  # noqa: E402

RAY_ADDRESS_VAR = "GYMGATE_RUN_RAY_ADDRESS"
_controller = ExitStack()


def pytest_addoption(parser):
    parser.addoption("--run-dir", help="run folder for results (default: a temp dir)")
    parser.addoption("--gym-source", help="JSON file describing the resolved Gym ref (provenance)")
    parser.addoption("--env", action="append", dest="envs", help="only this environment's paths (repeatable)")
    parser.addoption("--spinup-timeout", type=float, default=600.0, help="seconds one Gym may take to start")
    parser.addoption("--path", action="append", dest="paths", help="only this path id, e.g. mcqa:accepted")
    parser.addoption("--path-timeout", type=float, default=PATH_TIMEOUT_S, help="seconds one rollout may take")
    parser.addoption(
        "--stop-timeout", type=float, default=SHUTDOWN_TIMEOUT_S, help="seconds one Gym may take to stop gracefully"
    )


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def run_dir_of(config) -> Path:
    option = config.getoption("--run-dir") or os.environ.get("GYMGATE_RUN_DIR")
    if not option:
        option = tempfile.mkdtemp(prefix="gymgate-run-")
    os.environ["GYMGATE_RUN_DIR"] = option  # workers and the controller's hooks agree on one folder
    path = Path(option)
    path.mkdir(parents=True, exist_ok=True)
    return path


def selected_environments(config):
    """--env, narrowed by --path: a Gym is started only if one of its paths will run."""
    envs = load_environments(config.getoption("envs"))
    paths = config.getoption("paths")
    return [e for e in envs if e.name in {p.split(":")[0] for p in paths}] if paths else envs


def pytest_configure(config):
    config.addinivalue_line("markers", "selftest: gymgate's own negative tests on real paths")
    if _is_worker(config) or os.environ.get(RAY_ADDRESS_VAR):
        return
    run_dir_of(config)
    run_id = os.environ.get(RUN_MARKER, "adhoc")
    gcs = _controller.enter_context(private_ray(run_id, namespace=f"gymgate-{run_id}"))
    os.environ[RAY_ADDRESS_VAR] = gcs  # workers are spawned after configure and inherit it


def pytest_unconfigure(config):
    if not _is_worker(config):
        _controller.close()
        # Whatever a crashed worker's Gyms left behind carries this run's marker: stop it by PID.
        if os.environ.get(RUN_MARKER):
            sweep(os.environ[RUN_MARKER])


def pytest_runtest_logreport(report):
    """Controller side: a path that failed outside run_path (its worker died, or the session fixture could not
    start) wrote no record; write an ERROR record with the cause, so no path is ever silently absent."""
    if report.passed or report.skipped or "test_paths.py" not in report.nodeid or "[" not in report.nodeid:
        return
    if report.when == "call" and "crashed" not in str(report.longrepr or ""):
        return  # run_path wrote the record itself
    path_id = report.nodeid.rsplit("[", 1)[1].rstrip("]")
    env, mode = path_id.split(":")
    run_dir = Path(os.environ.get("GYMGATE_RUN_DIR", ""))
    target = run_dir / "paths" / f"{env}-{mode}.json"
    if not run_dir.name or target.exists():
        return
    stage = "" if report.when in ("call", "???") else f" ({report.when})"  # "???" is xdist's crash report
    lines = [ln.strip() for ln in str(report.longrepr or "").splitlines() if ln.strip()]
    cause = next((ln for ln in lines if "crashed" in ln), None) or next(
        (ln for ln in reversed(lines) if ln.startswith("E ")), lines[-1] if lines else "unknown"
    )
    write_json_atomic(target, stub_record(path_id, ERROR, f"infrastructure{stage}: {cause}", blame=HARNESS))


def pytest_xdist_make_scheduler(config, log):
    from gymgate.parallel.schedule import EnvScheduling

    return EnvScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    names = {e.name for e in selected_environments(config)}
    paths = set(config.getoption("paths") or [])
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        env, mode = params.get("env"), params.get("mode")
        wanted = env is None or (env.name in names and (not paths or f"{env.name}:{mode}" in paths))
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def run_context(request, worker_id):
    import ray

    config = request.config
    run_dir = run_dir_of(config)
    run_id = os.environ.get(RUN_MARKER, "adhoc")
    source_file = config.getoption("--gym-source")
    gym = json.loads(Path(source_file).read_text()) if source_file else {}
    gym.setdefault("version", gym_compat.gym_version())
    environments = selected_environments(config)
    names = [e.name for e in environments]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    mine = owned_by(names, workers, worker_id if worker_id != "master" else "gw0")
    namespace = f"gymgate-{run_id}-{worker_id}"
    began = time.monotonic()
    tokenizer, inputs = shared_setup(run_dir, environments, gym_compat.gym_root())
    ray.init(
        address=os.environ[RAY_ADDRESS_VAR],
        namespace=namespace,
        log_to_driver=False,
        configure_logging=False,
        ignore_reinit_error=True,
    )
    record: dict = {"worker": worker_id, "namespace": namespace, "gcs": os.environ[RAY_ADDRESS_VAR], "planned": mine}

    def on_status(status) -> None:
        write_json_atomic(
            run_dir / "services" / f"{status.env}.json", {**status.to_json(), "worker": worker_id, "at": time.time()}
        )

    with ModelEndpoint(Sampling(GENERATION.temperature, GENERATION.top_p), tokenizer) as endpoint:
        fleet = Fleet(
            run_dir,
            environments,
            endpoint.base_url,
            tokenizer=tokenizer,
            spinup_timeout_s=config.getoption("--spinup-timeout"),
        )
        try:
            # Every planned Gym starts now, all at once; a path waits only for its own environment, so the first
            # environment ready is being rolled out while the others still start.
            launched_after = time.monotonic() - began
            starting = fleet.launch(os.environ[RAY_ADDRESS_VAR], on_status=on_status, names=mine)
            write_json_atomic(run_dir / "workers" / f"{worker_id}.json", record)

            def ensure(env_name: str) -> None:
                """Wait until this environment's Gym is ready, failed or skipped; one this worker was not planned
                for (its owner crashed) is started here, once; so is one torn down by an earlier path."""
                if env_name in fleet.discarded:  # torn down after a hang or a dead server: start a fresh one
                    fleet.discarded.discard(env_name)
                    starting.pop(env_name, None)
                if env_name not in starting:
                    starting.update(fleet.launch(os.environ[RAY_ADDRESS_VAR], on_status=on_status, names=[env_name]))
                starting[env_name].result()

            yield RunContext(
                endpoint=endpoint,
                tokenizer=tokenizer,
                gym_root=gym_compat.gym_root(),
                run_dir=run_dir,
                gym=gym,
                handles=fleet.handles,
                statuses=fleet.statuses,
                inputs=inputs,
                ensure=ensure,
                path_timeout_s=config.getoption("--path-timeout"),
                watch=fleet.watch,
                discard=lambda name, why: fleet.discard(name, why, config.getoption("--stop-timeout")),
            )
        finally:
            record["named_actors"] = sorted(
                f"{a['namespace']}/{a['name']}" for a in ray.util.list_named_actors(all_namespaces=True)
            )
            planned = [fleet.statuses[name].seconds for name in mine if name in fleet.statuses]
            record["ready_seconds"] = round(launched_after + max(planned, default=0.0), 2)
            stop_began = time.monotonic()
            # What did not stop within its bounds was killed; the harness fails the run's lifecycle check on it.
            record["stop_errors"] = fleet.stop(config.getoption("--stop-timeout"))
            record["stop_seconds"] = round(time.monotonic() - stop_began, 2)
            record["endpoint_requests"] = len(endpoint.exchanges)
            write_json_atomic(run_dir / "workers" / f"{worker_id}.json", record)
            ray.shutdown()
