"""The acceptance matrix as a pytest session inside a pin's environment.

Once per session: the run's private Ray cluster, the deterministic model endpoint and one Gym actor per
environment (started in parallel). Each test is one path. `gymgate accept` runs this; so can a person:
`<pin-env>/bin/python -m pytest tests/acceptance --run-dir runs/x`.
"""

from __future__ import annotations

import os

from gymgate.services.ray_cluster import RUN_ENVIRONMENT

os.environ.update(RUN_ENVIRONMENT)  # before anything imports Ray

import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from gymgate.acceptance.path import GENERATION, RunContext  # noqa: E402
from gymgate.catalog import load_environments  # noqa: E402
from gymgate.model.endpoint import ModelEndpoint, Sampling  # noqa: E402
from gymgate.model.tokenizer import build_tokenizer  # noqa: E402
from gymgate.services import gym_compat  # noqa: E402
from gymgate.services.fleet import Fleet  # noqa: E402
from gymgate.services.processes import RUN_MARKER  # noqa: E402
from gymgate.services.ray_cluster import private_ray  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--run-dir", help="run folder for results (default: a pytest temp dir)")
    parser.addoption("--gym-source", help="JSON file describing the resolved Gym ref (provenance)")
    parser.addoption("--env", action="append", dest="envs", help="only this environment's paths (repeatable)")
    parser.addoption("--spinup-timeout", type=float, default=600.0, help="seconds one Gym may take to start")


def selected_environments(config):
    return load_environments(config.getoption("envs"))


def pytest_collection_modifyitems(config, items):
    names = {e.name for e in selected_environments(config)}
    keep, drop = [], []
    for item in items:
        env = getattr(getattr(item, "callspec", None), "params", {}).get("env")
        (keep if env is None or env.name in names else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def run_context(request, tmp_path_factory):
    option = request.config.getoption("--run-dir")
    run_dir = Path(option) if option else tmp_path_factory.mktemp("run")
    run_dir.mkdir(parents=True, exist_ok=True)
    source_file = request.config.getoption("--gym-source")
    gym = json.loads(Path(source_file).read_text()) if source_file else {}
    gym.setdefault("version", gym_compat.gym_version())
    run_id = os.environ.get(RUN_MARKER, "adhoc")
    tokenizer = build_tokenizer()
    environments = selected_environments(request.config)
    began = time.monotonic()
    with (
        private_ray(run_id, namespace=f"gymgate-{run_id}") as gcs,
        ModelEndpoint(Sampling(GENERATION.temperature, GENERATION.top_p), tokenizer) as endpoint,
    ):
        fleet = Fleet(
            run_dir,
            environments,
            endpoint.base_url,
            tokenizer=tokenizer,
            spinup_timeout_s=request.config.getoption("--spinup-timeout"),
        )
        try:
            statuses = fleet.start(gcs)
            ready_s = time.monotonic() - began
            (run_dir / "services.json").write_text(
                json.dumps(
                    {"ready_seconds": round(ready_s, 2), "environments": {k: v.to_json() for k, v in statuses.items()}},
                    indent=2,
                    default=str,
                )
            )
            yield RunContext(
                endpoint=endpoint,
                tokenizer=tokenizer,
                gym_root=gym_compat.gym_root(),
                run_dir=run_dir,
                gym=gym,
                handles=fleet.handles,
                statuses=statuses,
            )
        finally:
            fleet.stop()
