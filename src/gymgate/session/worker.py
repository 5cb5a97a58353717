"""One process's share of a run inside the pin's environment: its Ray namespace, its model endpoint (or an external
policy URL), its Fleet of Gyms and its worker record. The pytest plugin (one per xdist worker) and `gymgate up`
use the same object; the run's Ray cluster itself is started once per run by whoever controls it
(`services.ray_cluster.private_ray`)."""

from __future__ import annotations

import dataclasses
import signal
import time
from concurrent.futures import Future
from typing import Any

from gymgate.cases.environments import Environment
from gymgate.consumer.postprocess import ActorSide
from gymgate.outcomes import EnvState
from gymgate.runfolder import EnvStatus, RunFolder, WorkerRecord
from gymgate.services.fleet import INTERRUPT_SHUTDOWN_TIMEOUT_S, SPINUP_TIMEOUT_S, Fleet
from gymgate.services.lifecycle import SHUTDOWN_TIMEOUT_S


def honour_sigint() -> None:
    """SIGINT is how the harness (and a terminal's Ctrl-C) asks a session to stop its Gyms. A process started with
    SIGINT ignored (the harness itself a background job of a non-interactive shell) would keep ignoring it, and Python
    raise no KeyboardInterrupt: catch it explicitly. Called in the main thread, before anything starts."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class WorkerSession:
    """Start the planned Gyms at once (`launch`), wait for or restart one (`ensure`), stop them all with the
    lifecycle bound (`stop`), and keep `workers/<worker>.json` and `services/<env>.json` up to date."""

    def __init__(
        self,
        run: RunFolder,
        worker: str,
        gcs: str,
        environments: list[Environment],
        policy_base_url,
        tokenizer: Any = None,
        spinup_timeout_s: float = SPINUP_TIMEOUT_S,
        stop_timeout_s: float = SHUTDOWN_TIMEOUT_S,
        on_status=None,
        began: float | None = None,
        max_live: int = 0,
        share: int = 1,
    ):
        self.run, self.worker, self.gcs = run, worker, gcs
        self.max_live = max_live  # Gyms of this worker up at once (0: no bound); the rest wait in `backlog`
        self.backlog: list[str] = []
        self.finished: set[str] = set()  # environments whose paths on this worker have all run
        self.wave_of: dict[str, int] = {}  # environment -> the wave that started it
        self.stop_timeout_s = stop_timeout_s
        self._on_status = on_status
        consumer = ActorSide(tokenizer) if tokenizer is not None else None  # `up` starts Gyms without a consumer
        self.fleet = Fleet(
            run, environments, policy_base_url, consumer=consumer, spinup_timeout_s=spinup_timeout_s, share=share
        )
        self.starting: dict[str, Future] = {}
        self.record = WorkerRecord(worker, gcs)
        self._began = time.monotonic() if began is None else began  # when this worker began (ready_seconds)

    def _status(self, status: EnvStatus) -> None:
        wave = self.wave_of.get(status.env)
        self.run.write_service_status(dataclasses.replace(status, worker=self.worker, at=time.time(), wave=wave))
        if self._on_status is not None:
            self._on_status(status)

    def launch(self, names: list[str], **record: Any) -> None:
        """The named Gyms start now, all at once without waiting — or, with a bound, the first `max_live` of them:
        the others wait and start one by one as an earlier one is `done_with` (waves of `max_live`, in this order).
        `record`: more fields of the worker record (WorkerRecord), e.g. namespace."""
        self.record = dataclasses.replace(
            self.record, **record, planned=names, launched_after_s=round(time.monotonic() - self._began, 3)
        )
        bound = self.max_live or len(names) or 1
        self.wave_of.update({name: index // bound + 1 for index, name in enumerate(names)})
        self.backlog = list(names[bound:])
        self._start(names[:bound])
        self.write_record()

    def _start(self, names: list[str]) -> None:
        self.starting.update(self.fleet.launch(self.gcs, on_status=self._status, names=names))

    def ensure(self, env_name: str) -> None:
        """Wait until this environment's Gym is ready, failed or skipped; one this worker was not planned for (its
        owner crashed), or not started yet (waiting for its wave), is started here, once; so is one torn down by an
        earlier path."""
        if env_name in self.fleet.discarded:  # torn down after a hang or a dead server: start a fresh one
            self.fleet.discarded.discard(env_name)
            self.starting.pop(env_name, None)
        if env_name in self.backlog:
            self.backlog.remove(env_name)
        if env_name not in self.starting:
            self._start([env_name])
        self.starting[env_name].result()

    def done_with(self, env_name: str) -> None:
        """This worker has run every path of the environment: when others wait for their wave, stop this one's Gym
        and start as many of them as it held (the pipeline keeps `max_live` environments up or starting; a shared
        instance stops, and makes room, with its last member; with nothing waiting, a finished Gym is left for the
        session's end, which stops them all in parallel)."""
        self.finished.add(env_name)
        if not self.backlog or env_name not in self.starting:
            return
        status = self.fleet.statuses.get(env_name)
        freed = self.fleet.retire(env_name, self.stop_timeout_s)
        if status is not None and status.status == EnvState.READY:
            self._status(dataclasses.replace(status, status=EnvState.DONE))
        if freed:
            names, self.backlog = self.backlog[: len(freed)], self.backlog[len(freed) :]
            self._start(names)

    def wait_all(self) -> dict[str, EnvStatus]:
        """Wait for every launched Gym; on Ctrl-C or SIGTERM mid-start, kill what exists at once (so the start
        threads' waits end) and re-raise."""
        try:
            for future in self.starting.values():
                future.result()
        except BaseException:
            self.fleet.stop(timeout_s=INTERRUPT_SHUTDOWN_TIMEOUT_S)
            raise
        return dict(self.fleet.statuses)

    def discard(self, env_name: str, why: str) -> None:
        self._restart_neighbours(env_name, self.fleet.discard(env_name, why, self.stop_timeout_s))

    def _restart_neighbours(self, env_name: str, taken: list[str]) -> None:
        """The neighbours a torn-down shared instance (a hang, a dead server: `discard`) took with it that still
        have paths to run start again now, together (they ran no path in it: the environment whose path failed is
        the one that goes alone). Started as each one's first path came, each start was waited for in turn, alone
        (measured on 0.4.0's default set: two neighbours, +3.3 s each on their worker's critical path). The
        environment itself starts again when its path asks (`ensure`)."""
        again = [m for m in taken if m != env_name and m not in self.finished]
        self.fleet.readmit(again)
        for member in again:
            self.starting.pop(member, None)
        if again:
            self._start(again)

    def stop(self) -> dict[str, list[str]]:
        """Stop every Gym (what does not stop within its bound is killed; its error is kept for the lifecycle
        check) and write the worker record."""
        planned = [self.fleet.statuses[n].seconds for n in self.record.planned or [] if n in self.fleet.statuses]
        self.record.ready_seconds = round((self.record.launched_after_s or 0.0) + max(planned, default=0.0), 2)
        began = time.monotonic()
        errors = self.fleet.stop(self.stop_timeout_s)
        self.record.stop_errors, self.record.stop_seconds = errors, round(time.monotonic() - began, 2)
        self.write_record()
        return errors

    def write_record(self) -> None:
        self.run.write_worker(self.worker, self.record)
