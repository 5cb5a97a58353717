"""The acceptance matrix as a pytest plugin inside a pin's environment, fanned out over xdist workers.

- The controller (the xdist master, or the only process without xdist) starts the run's Ray cluster on
  loopback and hands its address to the workers; it stops it at the end.
- Each worker connects in its own namespace, runs its own model endpoint, and starts the Gyms of the
  environments the plan gives it, all at once; an environment's paths are scheduled to its owner
  (gymgate.session.schedule), so each Gym starts once per run.
- Per-run setup shared by the workers (tokenizer artifact, example-row hashes) is produced once, under
  a file lock in the run folder, by whichever worker gets there first.
`gymgate accept` runs this; so can a person:
`<pin-env>/bin/python -m pytest -p gymgate.session.plugin src/gymgate/session/items.py --run-dir runs/x`.
"""

from __future__ import annotations

import os

from gymgate.processes import RUN_ENVIRONMENT

os.environ.update(RUN_ENVIRONMENT)  # before anything imports Ray

import tempfile  # noqa: E402
import time  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from gymgate.acceptance.setup import shared_setup  # noqa: E402
from gymgate.cases.named import load_environments  # noqa: E402
from gymgate.endpoint.server import ModelEndpoint, Sampling  # noqa: E402
from gymgate.kinds import kinds, planfile
from gymgate.kinds.plan import plan as plan_paths
from gymgate.kinds.plan import recordings_of
from gymgate.options import add_session_options  # noqa: E402
from gymgate.outcomes import ERROR, HARNESS  # noqa: E402
from gymgate.pathid import PathId, environments  # noqa: E402
from gymgate.processes import RUN_MARKER, sweep  # noqa: E402
from gymgate.recordings.read import LocalFiles
from gymgate.rl.profile import load as load_profile  # noqa: E402
from gymgate.runfolder import PathRecord, RunFolder  # noqa: E402
from gymgate.runner.path import GENERATION, RunContext  # noqa: E402
from gymgate.selection import ALL
from gymgate.services import gym_compat  # noqa: E402
from gymgate.services.launcher import service as launcher_service  # noqa: E402
from gymgate.services.ray_cluster import private_ray  # noqa: E402
from gymgate.session.owners import live_share, plan, run_costs  # noqa: E402
from gymgate.session.schedule import EnvScheduling, env_of
from gymgate.session.worker import WorkerSession, honour_sigint  # noqa: E402

honour_sigint()  # the controller and (through it) every xdist worker stop on SIGINT
RAY_ADDRESS_VAR = "GYMGATE_RUN_RAY_ADDRESS"
RUN_DIR_VAR = "GYMGATE_RUN_DIR"
ITEMS = "items.py"  # the module whose items are the rollout paths (one per path id)
_controller = ExitStack()
_live: list[WorkerSession] = []  # this process's worker session while its fixture is up (waves: done_with)
_workers: dict[str, bool] = {}  # controller: each xdist worker that came up, and whether it ended its session cleanly


def pytest_addoption(parser):
    add_session_options(parser.addoption)  # declared once, in gymgate.options


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def run_of(config) -> RunFolder:
    option = config.getoption("run_dir") or os.environ.get(RUN_DIR_VAR)
    if not option:
        option = tempfile.mkdtemp(prefix="gymgate-run-")
    os.environ[RUN_DIR_VAR] = option  # workers and the controller's hooks agree on one folder
    path = Path(option)
    path.mkdir(parents=True, exist_ok=True)
    return RunFolder(path)


def selected_environments(config):
    """--env, narrowed by --path: a Gym is started only if one of its paths will run."""

    # A name no case has is derived from this Gym's own config (--env-set all; cases/derived.py).
    envs = load_environments(config.getoption("envs"), gym=LocalFiles(gym_compat.gym_root()))
    paths = config.getoption("only_paths")
    return [e for e in envs if e.name in environments(paths)] if paths else envs


def session_paths(config) -> list:
    """The paths this session runs: exactly the plan the harness handed the run (plan.jsonl), each in the
    environment of its name this Gym declares; in a session started by hand, every path this Gym's environments
    have (gymgate.kinds.plan: the recordings it ships, every kind's paths) when --path names them, else the paths
    each kind plans unasked. --path narrows either."""

    envs = selected_environments(config)
    wanted = set(config.getoption("only_paths") or [])
    handed = run_of(config).plan()
    if handed is not None:
        return [p for p in planfile.read(handed, envs) if not wanted or p.id in wanted]
    recordings = recordings_of(LocalFiles(gym_compat.gym_root()), envs, gym_compat.gym_version() or "")
    every = plan_paths(envs, recordings, {k.name: ALL for k in kinds()} if wanted else None)
    return [p for p in every if not wanted or p.id in wanted]


def pytest_configure(config):
    config.addinivalue_line("markers", "selftest: gymgate's own negative tests on real paths")
    if _is_worker(config) or os.environ.get(RAY_ADDRESS_VAR):
        return
    run = run_of(config)
    run_id = os.environ.get(RUN_MARKER, "adhoc")
    # The zygotes before Ray (its workers inherit them); the pytest workers wait for them, after their own start.
    _controller.enter_context(launcher_service.serving(run.launcher_log))
    gcs = _controller.enter_context(private_ray(run_id, namespace=f"gymgate-{run_id}"))
    os.environ[RAY_ADDRESS_VAR] = gcs  # workers are spawned after configure and inherit it


def pytest_testnodeready(node):
    _workers[node.gateway.id] = False


def pytest_testnodedown(node, error):
    output = getattr(node, "workeroutput", None) or {}
    clean = error is None and output.get("exitstatus") in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    _workers[node.gateway.id] = clean and _workers.get(node.gateway.id) is not None


def pytest_sessionfinish(session):
    """Every worker ended its session cleanly: it stopped its Gyms and left Ray before it said so. Ray and the
    launcher stop now, while the workers' interpreters still exit (~0.9 s, which xdist's teardown waits for after
    this hook); after anything else they stop in pytest_unconfigure, once the workers are gone."""
    if not _is_worker(session.config) and _workers and all(_workers.values()):
        _controller.close()


def pytest_unconfigure(config):
    if not _is_worker(config):
        _controller.close()
        # Whatever a crashed worker's Gyms left behind carries this run's marker: stop it by PID.
        if os.environ.get(RUN_MARKER):
            sweep(os.environ[RUN_MARKER])


def pytest_runtest_logreport(report):
    """Controller side: a path that failed outside run_path (its worker died, or the session fixture could not
    start) wrote no record; write an ERROR record with the cause, so no path is ever silently absent."""
    path_id = PathId.in_node(report.nodeid)
    if report.passed or report.skipped or ITEMS not in report.nodeid or path_id is None:
        return
    if report.when == "call" and "crashed" not in str(report.longrepr or ""):
        return  # run_path wrote the record itself
    if not os.environ.get(RUN_DIR_VAR):
        return
    run = RunFolder(Path(os.environ[RUN_DIR_VAR]))
    if run.has_record(path_id):
        return
    stage = "" if report.when in ("call", "???") else f" ({report.when})"  # "???" is xdist's crash report
    lines = [ln.strip() for ln in str(report.longrepr or "").splitlines() if ln.strip()]
    cause = next((ln for ln in lines if "crashed" in ln), None) or next(
        (ln for ln in reversed(lines) if ln.startswith("E ")), lines[-1] if lines else "unknown"
    )
    run.write_record(PathRecord.stub(path_id, ERROR, f"infrastructure{stage}: {cause}", blame=HARNESS))


def pytest_runtest_teardown(item, nextitem):
    """Worker side: the last path of an environment on this worker (the scheduler hands an environment's paths
    over as one unit) lets the worker stop its Gym and start the next wave's."""
    if not _live or nextitem is None:
        return  # the session's end stops every Gym

    env = env_of(item.nodeid)
    if env != env_of(nextitem.nodeid):
        _live[-1].done_with(env)


def pytest_xdist_make_scheduler(config, log):
    return EnvScheduling(config, log)


@pytest.fixture(scope="session")
def run_context(request, worker_id):
    import ray  # noqa: PLC0415 - pin environment only (Ray)

    config = request.config
    run = run_of(config)
    run_id = os.environ.get(RUN_MARKER, "adhoc")
    gym = run.source()  # the resolved ref, written by the harness ({} when run by hand)
    mark = run.mark()  # the harness's run mark: each path's own deadline ({} when run by hand)
    gym.setdefault("version", gym_compat.gym_version())
    environments = selected_environments(config)
    names = [e.name for e in environments]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    # The scheduler's plan, from the same collection: each worker collects every path.
    costs = run_costs(p for p in (PathId.in_node(i.nodeid) for i in request.session.items) if p is not None)
    assignment = plan(names, workers, costs)
    me = worker_id if worker_id != "master" else "gw0"
    mine = [e for e in names if assignment[e] == me]
    namespace = f"gymgate-{run_id}-{worker_id}"
    began = time.monotonic()
    tokenizer, inputs = shared_setup(run, environments, gym_compat.gym_root())
    gcs = os.environ[RAY_ADDRESS_VAR]
    ray.init(address=gcs, namespace=namespace, log_to_driver=False, configure_logging=False, ignore_reinit_error=True)
    with ModelEndpoint(Sampling(GENERATION.temperature, GENERATION.top_p), tokenizer) as endpoint:
        session = WorkerSession(
            run,
            worker_id,
            gcs,
            environments,
            endpoint.base_url,
            tokenizer=tokenizer,
            spinup_timeout_s=config.getoption("spinup_timeout"),
            stop_timeout_s=config.getoption("stop_timeout"),
            began=began,
            max_live=live_share(assignment, config.getoption("max_envs"), me),  # the run's bound, shared
            share=config.getoption("share"),
        )
        _live.append(session)
        try:
            # Every planned Gym starts now, all at once; a path waits only for its own environment, so the first
            # environment ready is being rolled out while the others still start. The zygotes imported meanwhile.
            launcher_service.wait_exported(run.launcher_log)
            session.launch(mine, namespace=namespace)
            profile = load_profile(config.getoption("rl_profile"))
            yield RunContext(
                endpoint=endpoint,
                tokenizer=tokenizer,
                gym_root=gym_compat.gym_root(),
                run=run,
                gym=gym,
                handles=session.fleet.handles,
                statuses=session.fleet.statuses,
                inputs=inputs,
                ensure=session.ensure,
                path_timeout_s=config.getoption("path_timeout"),
                deadlines=mark.deadlines if mark else {},
                attempts=config.getoption("attempts"),
                profile=profile,
                recipe=profile.recipe(config.getoption("rl_recipe")) if config.getoption("rl_recipe") else None,
                watch=session.fleet.watch,
                discard=session.discard,
                shared=session.fleet.shared,
                isolate=session.fleet.isolate,
            )
        finally:
            session.record.named_actors = sorted(
                f"{a['namespace']}/{a['name']}" for a in ray.util.list_named_actors(all_namespaces=True)
            )
            session.record.endpoint_requests = len(endpoint.exchanges)
            # What did not stop within its bounds was killed; the harness fails the run's lifecycle check on it.
            _live.remove(session)
            session.stop()
            ray.shutdown()
