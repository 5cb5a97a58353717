"""Live progress of a run, drawn by the harness from the run folder the workers write into.

Workers only write records (services/<env>.json as environments start and become ready, paths/*.json as
paths finish); this view reads them. On a terminal it is a live table; in CI (no TTY) it prints one
short line per event.
"""

from __future__ import annotations

import sys
import threading
import time

from gymgate.ci.github import command, folding
from gymgate.outcomes import ERROR, FAIL, PASS, SKIP, EnvState
from gymgate.pathid import MODES, PathId
from gymgate.runfolder import EnvStatus, PathRecord, RunFolder

OUTCOME_STYLE = {PASS: "green", FAIL: "red", ERROR: "red", SKIP: "yellow"}
ENV_STYLE = {
    EnvState.STARTING: "cyan",
    EnvState.READY: "green",
    EnvState.FAILED: "red",
    EnvState.SKIPPED: "yellow",
    EnvState.DONE: "dim",
}


class Progress:
    def __init__(
        self,
        run: RunFolder,
        total_paths: int,
        stream=None,
        tty: bool | None = None,
        interval: float = 0.5,
        total_envs: int = 0,
    ):
        self.run = run
        self.total = total_paths
        self.total_envs = total_envs
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval
        self.began = time.monotonic()
        self.envs: dict[str, EnvStatus] = {}
        self.paths: dict[str, PathRecord] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> list[str]:
        """Read the run folder; returns plain lines for what changed since the last poll."""
        lines = []
        for env, status in self.run.service_statuses().items():
            seen = self.envs.get(env)
            if seen is None or seen.status != status.status:
                self.envs[env] = status
                extra = f" ({status.worker})" if status.worker else ""
                took = f" {status.seconds:.1f}s" if status.status != EnvState.STARTING else ""
                wave = f" wave {status.wave}" if status.wave else ""
                lines.append(f"{status.status:<8} {env}{extra}{wave}{took}")
        seen = {record.file_stem for record in self.paths.values()}  # a record file is written once, whole
        for name, record in self.run.written_records(known=seen).items():
            if name not in self.paths:
                self.paths[name] = record
                reason = f"  {record.reason.splitlines()[0][:100]}" if record.reason else ""
                lines.append(f"{record.outcome:<8} {record.path}{reason}")
        return lines

    def counts(self) -> dict[str, int]:
        outcomes = [r.outcome for r in self.paths.values()]
        return {k: outcomes.count(k) for k in (PASS, FAIL, ERROR, SKIP)}

    def footer(self) -> str:
        c = self.counts()
        return (
            f"paths {len(self.paths)}/{self.total}: {c[PASS]} passed, {c[FAIL]} failed, {c[ERROR]} errors, "
            f"{c[SKIP]} skipped{self.environments()} — {time.monotonic() - self.began:.0f}s"
        )

    def environments(self) -> str:
        """`; environments D/N done, U up, S starting, wave W` once the run starts Gyms in waves ("" before)."""
        waves = [s.wave for s in self.envs.values() if s.wave]
        if not waves or max(waves) < 2:
            return ""
        states = [s.status for s in self.envs.values()]
        done = sum(1 for s in states if s in (EnvState.DONE, EnvState.FAILED, EnvState.SKIPPED))
        return (
            f"; environments {done}/{self.total_envs or len(states)} done, {states.count(EnvState.READY)} up, "
            f"{states.count(EnvState.STARTING)} starting, wave {max(waves)}"
        )

    def _table(self):
        from rich.table import Table  # noqa: PLC0415 - CLI start-up: rich loads only when the live view shows

        table = Table(title=self.footer(), title_justify="left", show_edge=False)
        for column in ("environment", "gym", "wave", "worker", *MODES, "other paths"):
            table.add_column(column)
        for env, status in sorted(self.envs.items()):
            state = status.status
            cells = [env, f"[{ENV_STYLE[state]}]{state}[/]", str(status.wave or ""), status.worker or ""]
            for mode in MODES:
                record = self.paths.get(PathId.of(env, mode))
                outcome = record.outcome if record else ""
                cells.append(f"[{OUTCOME_STYLE.get(outcome, 'white')}]{outcome}[/]")
            others = [r.outcome for p, r in self.paths.items() if PathId(p).env == env and PathId(p).mode not in MODES]
            cells.append(", ".join(f"{others.count(k)} {k}" for k in (PASS, FAIL, ERROR, SKIP) if others.count(k)))
            table.add_row(*cells)
        return table

    def _loop(self) -> None:
        if self.tty:
            from rich.console import Console  # noqa: PLC0415 - CLI start-up: rich loads only when the live view shows
            from rich.live import Live  # noqa: PLC0415 - CLI start-up: rich loads only when the live view shows

            with Live(self._table(), console=Console(file=self.stream), refresh_per_second=4, transient=False) as live:
                while not self._stop.wait(self.interval):
                    self.poll()
                    live.update(self._table())
                self.poll()
                live.update(self._table())
            return
        folds = folding()  # the Actions log folds start-up, then paths (start-ups after the first path go there)
        phase = ""
        while True:
            stopping = self._stop.wait(self.interval)
            for line in self.poll():
                now = "paths" if self.paths else "Gym start-up"
                if folds and now != phase:
                    print(
                        ("::endgroup::\n" if phase else "") + command("group", f"{now}: {self.run.name}"),
                        file=self.stream,
                    )
                    phase = now
                print(f"[{time.monotonic() - self.began:6.1f}s] {line}", file=self.stream, flush=True)
            if stopping:
                if phase:
                    print("::endgroup::", file=self.stream)
                print(self.footer(), file=self.stream, flush=True)
                return

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._loop, name="gymgate-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
