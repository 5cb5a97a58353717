"""All acceptance environments of one Gym ref, started from the pin's environment and stopped again.

Runs inside the pin's synced environment. Each Gym instance (one environment's, or several environments' that
share it: services/sharing.py) gets its own Gym actor, port band and scratch directory; all share the run's Ray
cluster. A shared instance that fails to start, or is torn down, is never the end of its members: each that failed
starts again in an instance of its own, so one environment's failure fails only itself (the neighbours of a torn-down
instance that ran no path in it may start again together: session/worker.WorkerSession).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gymgate.cases.environments import MODEL_CONFIG, Environment
from gymgate.endpoint import POLICY_MODEL
from gymgate.options import default
from gymgate.outcomes import GYM, HARNESS, EnvState
from gymgate.processes import alive
from gymgate.runfolder import EnvStatus, RunFolder  # EnvStatus: also imported from here (tests/inenv)
from gymgate.services import gym_compat, gymlog, launcher, lifecycle, sharing
from gymgate.services.gym_actor import GymActor
from gymgate.services.launcher.venv import launcher_venv
from gymgate.services.ports import BandLease, free_port_in, lease_band
from gymgate.services.ray_cluster import is_ray_failure, unwrap
from gymgate.text import strip_ansi

STARTING, READY, SKIPPED, FAILED = EnvState.STARTING, EnvState.READY, EnvState.SKIPPED, EnvState.FAILED
SPINUP_TIMEOUT_S = default("spinup_timeout")
PROBE_TIMEOUT_S = 10.0
INTERRUPT_SHUTDOWN_TIMEOUT_S = 15.0


def probe(server: dict[str, Any], timeout: float = PROBE_TIMEOUT_S) -> int | None:
    """The HTTP status a server answers `GET /` with (any status counts as alive), or None."""
    url = f"http://{server['host']}:{server['port']}/"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


CANNOT_RUN_YET = "gymgate cannot run this Gym yet"  # a start-up that needed what gymgate's set-up did not provide


def link_venvs(
    venvs_dir: Path, env_prefix: Path, environments: list[Environment], gym_root: Path | None = None
) -> None:
    """Point every server dir's `.venv` at the pin's single env, so Gym never runs uv (skip_venv_if_present): the
    case's dirs and every dir the Gym's own config (under `gym_root`) declares (0.7.0's environment servers).
    The workers of a run share the folder and link at the same moment: an existing link to the same env is fine."""
    for env in environments:
        declared = gym_compat.config_server_dirs(env.config, MODEL_CONFIG, root=gym_root) if gym_root else []
        # Gym looks for a server's venv under the last two parts of its dir (`<type>/<impl>`): for an impl nested one
        # folder deeper (responses_api_agents/conversational_tool_use/simulation) that is not the dir itself.
        dirs = [*env.all_server_dirs, *declared]
        for server_dir in dict.fromkeys([*dirs, *("/".join(Path(d).parts[-2:]) for d in dirs)]):
            link = venvs_dir / server_dir / ".venv"
            link.parent.mkdir(parents=True, exist_ok=True)
            try:
                link.symlink_to(env_prefix)
            except FileExistsError:
                if not (link.is_symlink() and Path(os.readlink(link)) == env_prefix):
                    raise


def gym_config(
    envs: list[Environment], policy_base_url: str, venvs_dir: Path, gcs: str, band: tuple[int, int]
) -> dict[str, Any]:
    """One Gym instance's config: its environments' configs and the model config, merged by Gym as RL's NemoGym
    actor has it merge them, with each environment's overrides."""
    low, high = band
    config: dict[str, Any] = {
        "config_paths": [*(env.config for env in envs), MODEL_CONFIG],
        "policy_base_url": policy_base_url,
        "policy_api_key": "gymgate",
        "policy_model_name": POLICY_MODEL,
        "skip_venv_if_present": True,
        "uv_venv_dir": str(venvs_dir),
        "head_server": {"host": "127.0.0.1", "port": free_port_in(low, high)},
        "default_host": "127.0.0.1",
        "ray_head_node_address": gcs,
        "port_range_low": low,
        "port_range_high": high,
        **gym_compat.start_overrides(),
    }
    for dotted, value in (item for env in envs for item in env.overrides.items()):
        node = config
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return config


class Fleet:
    """Start, probe and stop the Gym instances of one run. Use as a context manager: exit stops everything."""

    def __init__(
        self,
        run: RunFolder,
        environments: list[Environment],
        policy_base_url: str,
        consumer: Any = None,
        spinup_timeout_s: float = SPINUP_TIMEOUT_S,
        share: int = 1,
    ):
        self.run = run
        self.environments = environments
        self._by_name = {env.name: env for env in environments}
        self._own: dict[str, frozenset[str]] = {}  # per environment: the servers its own config declares
        self.share = share  # environments per Gym instance at most (services/sharing.py); 1: each its own
        self.policy_base_url = policy_base_url
        self.consumer = consumer  # installed into every Gym actor (GymActor.set_consumer)
        self.spinup_timeout_s = spinup_timeout_s
        self.handles: dict[str, lifecycle.GymHandle] = {}
        self.statuses: dict[str, EnvStatus] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._pools: list[ThreadPoolExecutor] = []
        self._leases: dict[str, BandLease] = {}  # per instance key, held until the Gym stops (its servers' ports)
        self._generations: dict[str, int] = {}  # how often each instance's Gym was started (restarts)
        self.instance_of: dict[str, sharing.Instance] = {}  # environment -> the instance it runs (or last ran) in
        self.alone: set[str] = set()  # from now on each starts in an instance of its own (see the module docstring)
        self._retired: set[str] = set()  # environments whose paths are done (a shared instance stops with its last)
        self.discarded: set[str] = set()  # torn down mid-run or isolated: the next path of it starts it again
        self.stop_errors: dict[str, list[str]] = {}  # per environment: what did not stop within its bounds
        self._actor_runtime_env: dict[str, str] = {}  # the launcher's python for the Gym actors' Ray workers

    def launch(self, gcs: str, on_status=None, names: list[str] | None = None) -> dict[str, Future]:
        """Begin starting the named environments (default: all) in parallel and return at once: one future per
        environment, done when its status (ready, failed or skipped) is in `statuses`. A caller waits only for the
        environment it needs next, so its paths run while the others are still starting. `stop()` ends all."""
        prefix = Path(sys.prefix)
        # With the launcher on, every server's `python`, and the Gym actors', is its client (services/launcher).
        if launcher.enabled():
            prefix = launcher_venv(self.run.venvs_dir.parent / "launcher-venv", prefix)
            self._actor_runtime_env = {"py_executable": str(prefix / "bin" / "python")}
        link_venvs(self.run.venvs_dir, prefix, self.environments, gym_compat.gym_root())
        self.run.logs_dir.mkdir(parents=True, exist_ok=True)
        futures: dict[str, Future] = {}
        present = []
        for env in self.environments:
            if names is not None and env.name not in names:
                continue
            if gym_compat.has_config(env.config):
                present.append(env)
            else:  # this Gym does not have the environment: its paths are skipped
                reason = f"{env.config} is not in nemo-gym {gym_compat.gym_version()}"
                self._record(EnvStatus(env.name, SKIPPED, reason), on_status)
                futures[env.name] = Future()
                futures[env.name].set_result(None)
        if present:
            with self._lock:
                alone = [e.name for e in present if e.name in self.alone]
            shareable = [e.name for e in present if e.name not in alone]
            instances = sharing.pack(shareable, self.share, self._own_servers) + sharing.pack(
                alone, 1, self._own_servers
            )
            pool = ThreadPoolExecutor(max_workers=len(instances), thread_name_prefix="gym-start")
            self._pools.append(pool)
            for instance in instances:
                future = pool.submit(self._start_instance, instance, gcs, on_status)
                futures.update(dict.fromkeys(instance.members, future))
            pool.shutdown(wait=False)  # no more work; the threads end when their start does
        return futures

    def _own_servers(self, env_name: str) -> frozenset[str]:
        """The server instances this environment's own config declares (what it does not share); read once."""
        if env_name not in self._own:
            config = self._by_name[env_name].config
            servers = gym_compat.config_servers(config, root=gym_compat.gym_root())
            self._own[env_name] = frozenset(name for name, _, _ in servers)
        return self._own[env_name]

    def _instance_log(self, instance: sharing.Instance) -> Path:
        """The instance's Gym log. A shared instance writes one log, and each member's log names it (a link), so
        a path reads its Gym's log by its environment's name; a member that later starts alone gets a file again."""
        log = self.run.log(instance.key)
        for member in instance.members:
            own = self.run.log(member)
            if own.is_symlink():
                own.unlink()
            if instance.shared and not own.exists():  # (a member never shares again once it ran alone)
                own.symlink_to(log.name)
        return log

    def _start_instance(self, instance: sharing.Instance, gcs: str, on_status) -> None:
        """Lease a port band, start the instance's Gym actor, probe its servers; record each member ready or failed
        (never raises). A shared instance that does not come up whole starts each member again alone."""
        began = time.monotonic()
        for member in instance.members:
            if on_status:
                on_status(EnvStatus(member, STARTING))
        self.run.logs_dir.mkdir(parents=True, exist_ok=True)
        log = self._instance_log(instance)
        since = gymlog.size(log)  # a restarted Gym appends to the same log: its cause is after this point
        try:
            lease = lease_band()
        except Exception as exc:  # noqa: BLE001 - gymgate's own resource, not Gym's doing
            for member in instance.members:
                status = EnvStatus(member, FAILED, f"port band: {exc}", time.monotonic() - began, blame=HARNESS)
                self._record(status, on_status)
            return
        with self._lock:
            self._leases[instance.key] = lease
            generation = self._generations[instance.key] = self._generations.get(instance.key, -1) + 1
        try:
            handle = self._start_actor(instance, gcs, lease, generation)
        except Exception as exc:  # one environment's failure must not stop the others
            with self._lock:  # start_gym tore it down already; stop() must not tear it down twice
                for member in instance.members:
                    self.handles.pop(member, None)
                self._leases.pop(instance.key, None)
            lease.release()  # nothing of this Gym listens any more
            if instance.shared:
                self._start_alone(instance.members, gcs, on_status)
                return
            reason, blame = startup_failure(exc, log, since)
            (member,) = instance.members
            status = EnvStatus(member, FAILED, reason, time.monotonic() - began, log=str(log), blame=blame)
            self._record(status, on_status)
            return
        servers = [dict(s, http_status=probe(s)) for s in handle.servers]
        dead = [s["name"] for s in servers if s["http_status"] is None]
        if dead and instance.shared:
            self._take_down(instance.members[0], lifecycle.SHUTDOWN_TIMEOUT_S)
            self._start_alone(instance.members, gcs, on_status)
            return
        for member in instance.members:
            status = EnvStatus(
                member,
                FAILED if dead else READY,
                gymlog.with_log_cause(f"no answer from {', '.join(dead)}", log, since) if dead else "",
                time.monotonic() - began,
                instance.servers_of(member, servers),
                str(log),
                blame=GYM if dead else "",
                instance=instance.key if instance.shared else None,
            )
            self._record(status, on_status)

    def _start_alone(self, members: list[str], gcs: str, on_status) -> None:
        """Each of a shared instance's members started again in an instance of its own, in parallel (which of them
        failed the shared start is not known; each alone tells)."""
        with self._lock:
            self.alone.update(members)
        alone = sharing.pack(members, 1, self._own_servers)
        with ThreadPoolExecutor(max_workers=len(alone), thread_name_prefix="gym-alone") as pool:
            list(pool.map(lambda i: self._start_instance(i, gcs, on_status), alone))

    def _start_actor(
        self, instance: sharing.Instance, gcs: str, lease: BandLease, generation: int
    ) -> lifecycle.GymHandle:
        """The instance's Gym actor, spun up inside `lease` with the consumer installed (lifecycle.start_gym)."""
        import ray  # noqa: PLC0415 - pin environment only (Ray)

        key = instance.key
        envs = [self._by_name[name] for name in instance.members]
        return lifecycle.start_gym(
            ray,
            ray.remote(GymActor),
            key,
            (key, str(self.run.gym_copy(key)), str(self.run.log(key))),
            gym_config(envs, self._base_url(instance.members), self.run.venvs_dir, gcs, (lease.low, lease.high)),
            self.consumer,
            spinup_timeout_s=self.spinup_timeout_s,
            actor_options={
                "name": f"gym-{key}" + (f"-{generation}" if generation else ""),
                "num_cpus": 0,
                "max_concurrency": 4,
                "max_restarts": 0,
                **({"runtime_env": self._actor_runtime_env} if self._actor_runtime_env else {}),
            },
            on_created=lambda handle: self._register(instance, handle),
        )

    def _base_url(self, members: list[str]) -> str:
        url = self.policy_base_url
        return url(members) if callable(url) else url

    def _register(self, instance: sharing.Instance, handle: lifecycle.GymHandle) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the run is stopping; this Gym will not be started")
            for member in instance.members:
                self.handles[member] = handle
                self.instance_of[member] = instance
                self._retired.discard(member)

    def _record(self, status: EnvStatus, on_status) -> None:
        with self._lock:
            self.statuses[status.env] = status
        if on_status:
            on_status(status)

    def watch(self, env_name: str) -> str:
        """Empty while every server process of this environment's Gym lives; else which one died."""
        handle = self.handles.get(env_name)
        if handle is None:
            return ""
        instance = self.instance_of.get(env_name)
        for server in instance.servers_of(env_name, handle.servers) if instance else handle.servers:
            pid = server.get("pid")
            if pid and not alive(pid):
                return f"Gym server {server['name']} (pid {pid}) exited during the rollout"
        return ""

    def discard(self, env_name: str, why: str, timeout_s: float = lifecycle.SHUTDOWN_TIMEOUT_S) -> list[str]:
        """Tear this environment's Gym down now (it hung or a server died); a later launch starts a fresh one, and
        the neighbours it shared the instance with start again alone unless the caller lifts that (`alone`).
        Returns the environments taken down."""
        members = self._take_down(env_name, timeout_s)
        self.statuses[env_name] = EnvStatus(env_name, FAILED, f"torn down: {why}", blame=GYM)
        return members

    def shared(self, env_name: str) -> str:
        """The instance this environment's Gym is up in when it shares it with others, else ""."""
        instance = self.instance_of.get(env_name)
        return instance.key if env_name in self.handles and instance is not None and instance.shared else ""

    def isolate(self, env_name: str) -> bool:
        """Take this environment out of its shared instance: its next path starts it in an instance of its own
        (`discarded`, `alone`). The instance stays up for its other members — the attempt that erred left every
        server alive and answering (a hang or a dead server is `discard`'s), and a neighbour whose own attempt errs
        there leaves it the same way; its servers of this environment serve no one any more and stop with the
        instance. Tearing it down cost 0.4.0's default set a neighbours' restart (docs/benchmarks.md). Returns
        whether it was shared."""
        with self._lock:
            if not self.shared(env_name):
                return False
            self.handles.pop(env_name)
            self.discarded.add(env_name)
            self.alone.add(env_name)
        return True

    def readmit(self, members: list[str]) -> None:
        """These torn-down environments start again as they first did, sharing an instance (their next launch),
        not one by one and alone (WorkerSession._restart_neighbours: they ran no path in the instance)."""
        with self._lock:
            self.discarded.difference_update(members)
            self.alone.difference_update(members)

    def retire(self, env_name: str, timeout_s: float = lifecycle.SHUTDOWN_TIMEOUT_S) -> list[str]:
        """Stop this environment's Gym because its paths are done (a wave makes room for the next); a shared
        instance stops with the last of its members. A later path of it would start a fresh one. Returns the
        environments whose Gym stopped (none while a neighbour in its instance still runs)."""
        with self._lock:
            self._retired.add(env_name)
            if not self._retired.issuperset(self._members_up(env_name)):
                return []
        return self._take_down(env_name, timeout_s)

    def _members_up(self, env_name: str) -> list[str]:
        """The environments this one's Gym instance serves now (not one isolated from it since). Under the lock."""
        instance = self.instance_of.get(env_name) or sharing.Instance([env_name])
        handle = self.handles.get(env_name)
        return [m for m in instance.members if self.handles.get(m) is handle] if handle else [env_name]

    def _take_down(self, env_name: str, timeout_s: float) -> list[str]:
        """Tear the environment's Gym instance down within its bound (what does not stop is kept for the lifecycle
        check), then free its port band; its members are marked for a fresh start should a path of them come
        again — alone, when the instance was shared."""
        import ray  # noqa: PLC0415 - pin environment only (Ray)

        with self._lock:
            instance = self.instance_of.get(env_name) or sharing.Instance([env_name])
            handle = self.handles.get(env_name)
            members = self._members_up(env_name)
            for member in members:
                self.handles.pop(member, None)
            lease = self._leases.pop(instance.key, None)
            self.discarded.update(members)
            if instance.shared:
                self.alone.update(members)
        if handle is not None:
            errors = lifecycle.teardown(ray, handle, timeout_s)
            if errors:
                self.stop_errors.setdefault(instance.key, []).extend(map(strip_ansi, errors))
        if lease is not None:
            lease.release()
        return members

    def stop(self, timeout_s: float = lifecycle.SHUTDOWN_TIMEOUT_S) -> dict[str, list[str]]:
        """Tear every actor down in parallel, then wait for start threads still running (their actors are gone,
        so their waits end at once; a start that had not created its actor yet is refused); returns what did not
        stop within its bounds, per environment (also kept in `stop_errors`)."""
        import ray  # noqa: PLC0415 - pin environment only (Ray)

        with self._lock:
            if self._stopped:
                return dict(self.stop_errors)
            self._stopped = True
            handles = list({id(h): h for h in self.handles.values()}.values())  # a shared instance once
        if handles:
            with ThreadPoolExecutor(max_workers=len(handles)) as pool:
                results = pool.map(lambda h: (h.env_name, lifecycle.teardown(ray, h, timeout_s)), handles)
                for name, errs in results:
                    if errs:
                        self.stop_errors.setdefault(name, []).extend(map(strip_ansi, errs))
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)
        for lease in self._leases.values():
            lease.release()  # after teardown: nothing of these Gyms listens any more
        return dict(self.stop_errors)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def startup_failure(exc: BaseException, log: Path, since: int = 0) -> tuple[str, str]:
    """(reason, blame) of a Gym that failed to start. The reason leads with the line that says why: the failing
    server's own error from its log, else Gym's exception out of Ray's wrapper. A start-up that made Gym build a
    venv (uv looking for an interpreter or a download, with the network off) is gymgate's gap, not Gym's fault."""
    notes = "".join(f"\n  {n}" for n in getattr(exc, "__notes__", []))
    inner = unwrap(exc)
    reason = gymlog.with_log_cause(f"{type(inner).__name__}: {_short(inner)}{notes}", log, since)
    gap = gymlog.setup_gap(log, since)
    if gap:
        return f"{CANNOT_RUN_YET}: {gap} (logs/{log.name})\n{reason}", HARNESS
    return reason, HARNESS if is_ray_failure(exc) else GYM


def _short(exc: BaseException, limit: int = 1500) -> str:
    text = str(exc).strip()
    return text if len(text) <= limit else text[:limit] + " …"
