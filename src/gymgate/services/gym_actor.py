"""The Gym actor: one Ray actor owning one Gym instance (head server + its server processes).

The actor makes itself a process-group leader so that every Gym server it launches lands in its group:
its owner can then stop the whole instance with one kill of that group, whatever state Gym is in.
Gym caches one config per process, so one actor serves exactly one instance: one environment's, or the merged
config of several that share it (services/sharing.py), as RL's NemoGym actor hosts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gymgate.services import launcher
from gymgate.services.gym_compat import readiness_polled_often, run_helper_api, server_client_reused


class GymActor:
    """Plain class; `ray.remote(GymActor)` is applied by the lifecycle code (and fakes replace it in tests)."""

    def __init__(self, env_name: str, workdir: str, log_path: str):
        self.env_name = env_name
        self.rh = None
        self.consumer = None  # the RL consumer's actor-side half (set_consumer)
        with contextlib.suppress(OSError):
            os.setpgrp()
        Path(workdir).mkdir(parents=True, exist_ok=True)
        # A scratch cwd: Gym reads env.yaml and cwd-local server dirs from it, and writes outputs/ there.
        os.chdir(workdir)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)

    def identity(self) -> dict[str, int]:
        return {"pid": os.getpid(), "pgid": os.getpgrp()}

    def _spinup(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        from omegaconf import DictConfig  # noqa: PLC0415 - pin environment only (Gym), in the process that runs it

        run_helper_cls, parser_config_cls = run_helper_api()
        # Assigned before start(): a start that fails half-way must still be reachable by shutdown().
        self.rh = run_helper_cls()
        # GYMGATE_LAUNCHER=exec is Gym's own start-up, exactly: its 3 s between readiness checks included.
        with readiness_polled_often(run_helper_cls) if launcher.enabled() else contextlib.nullcontext():
            self.rh.start(
                parser_config_cls(
                    initial_global_config_dict=DictConfig(config),
                    skip_load_from_cli=True,
                    skip_load_from_dotenv=True,
                )
            )
        return self.servers()

    def servers(self) -> list[dict[str, Any]]:
        """Every server instance of this Gym with its address and process id."""
        from nemo_gym.global_config import get_global_config_dict  # noqa: PLC0415 - pin environment only (Gym), in the process that runs it

        config = get_global_config_dict()
        pids = {name: proc.pid for name, proc in (getattr(self.rh, "_processes", None) or {}).items()}
        found = []
        for name, value in config.items():
            try:
                ((server_type, inner),) = value.items()
                ((impl, settings),) = inner.items()
            except (AttributeError, ValueError, TypeError):
                continue
            if not hasattr(settings, "get") or "entrypoint" not in settings:
                continue
            found.append(
                {
                    "name": str(name),
                    "type": str(server_type),
                    "impl": str(impl),
                    "host": settings.get("host"),
                    "port": settings.get("port"),
                    "pid": pids.get(str(name)),
                }
            )
        head = config.get("head_server", {})
        found.append(
            {
                "name": "head_server",
                "type": "head",
                "impl": "head",
                "host": head.get("host"),
                "port": head.get("port"),
                "pid": os.getpid(),
            }
        )
        return found

    def run_rollouts(self, rows: list[dict[str, Any]]):
        """Ray streaming generator: (row index, postprocessed result, timing) per row, in completion order.

        Gym's collection helper is asyncio-based and keeps one global aiohttp client per process, so it
        runs on one event loop thread owned by this actor for the actor's whole life.
        """

        if self.rh is None:
            raise RuntimeError(f"Gym for {self.env_name}: _spinup() was never called")
        if not rows:
            raise ValueError("NeMo-Gym rollout batch must not be empty")
        if self.consumer is None:
            raise RuntimeError("GymActor.set_consumer must be called before run_rollouts")
        loop = self._event_loop()
        results: queue.Queue = queue.Queue()
        began = time.monotonic()

        async def collect() -> None:
            try:  # whatever raises ends the stream ("done" below): the driver never waits for a result in vain
                helper = self._collection_helper()
                for future in helper.run_examples(rows, head_server_config=self._head_server_config()):
                    try:
                        row, result = await future
                        results.put(("ok", row, result))
                    except Exception as exc:  # noqa: BLE001 - mapped to a typed failure below
                        results.put(("error", None, exc))
            except Exception as exc:  # noqa: BLE001
                results.put(("error", None, exc))
            results.put(("done", None, None))

        asyncio.run_coroutine_threadsafe(collect(), loop)
        first_error = None
        while True:
            status, row, payload = results.get()
            if status == "done":
                break
            if status == "error":
                first_error = first_error or self.consumer.failure(payload)
                continue
            processed = self.consumer.postprocess(payload)  # typed errors travel to the driver as-is
            # The agent Gym says served this row, before the consumer writes the rows' own agent_ref onto results.
            reported = payload.get("agent_ref") if "agent_ref" in payload else (row or {}).get("agent_ref")
            processed["gym_agent_ref"] = copy.deepcopy(reported)
            timing = {"timing/rollout/await_results": time.monotonic() - began}
            yield row["_rowidx"], processed, timing
        if first_error is not None:
            raise first_error

    def _event_loop(self):
        if getattr(self, "_loop", None) is None:
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, name="gym-rollouts", daemon=True).start()
        return self._loop

    def _collection_helper(self):
        """One collection helper for the actor's life, as NeMo RL's NemoGym actor keeps one; its server client is
        made once (gym_compat.server_client_reused), except under GYMGATE_LAUNCHER=exec: Gym's own way, exactly."""
        if getattr(self, "_helper", None) is None:
            from nemo_gym.rollout_collection import RolloutCollectionHelper  # noqa: PLC0415 - pin environment only (Gym), in the process that runs it

            helper = RolloutCollectionHelper()
            self._helper = server_client_reused(helper) if launcher.enabled() else helper
        return self._helper

    def _head_server_config(self):
        from nemo_gym.config_types import BaseServerConfig  # noqa: PLC0415 - pin environment only (Gym), in the process that runs it
        from nemo_gym.global_config import get_global_config_dict  # noqa: PLC0415 - pin environment only (Gym), in the process that runs it

        head = get_global_config_dict()["head_server"]
        return BaseServerConfig(host=head["host"], port=head["port"])

    def set_consumer(self, consumer: Any) -> None:
        """The RL consumer's half that runs here, as NeMo RL's does: `postprocess(result) -> dict` turns one Gym
        result into training data, `failure(exc) -> Exception` types a failed /run. Passed in (picklable), so the
        services never depend on the consumer."""
        if self.rh is None:
            raise RuntimeError("GymActor.set_consumer called before _spinup")
        self.consumer = consumer

    def shutdown(self) -> None:
        """Idempotent; tolerates a RunHelper whose start() failed before its process table or head thread existed."""
        rh, self.rh = self.rh, None
        if rh is None:
            return
        processes = getattr(rh, "_processes", None)
        if processes is None:
            return
        if getattr(rh, "_head_server", None) is None:
            for proc in processes.values():
                proc.kill()
            return
        rh.shutdown()
