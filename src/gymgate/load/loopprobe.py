"""Event-loop lag of Gym's servers during a load round, by probing: each server is asked for a page it does not have
every `period_s` on a connection of its own, and the answer's time is the lag — a server's 404 is answered by its
event loop in well under a millisecond, so a slow one says the loop was held (a blocking call, CPU work on the loop)
or queued behind many callbacks. Probing from outside works on every Gym release (nothing of gymgate runs in Gym's
servers) and costs each server one trivial request per period (docs/benchmarks.md: the overhead measured)."""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field

PROBE_PATH = "/gymgate-loop-probe"  # no Gym server has it: the 404 is the cheapest answer its loop can give
TIMEOUT_S = 10.0  # one probe's bound (a loop held longer is reported at this)


@dataclass
class _Server:
    name: str
    host: str
    port: int
    times_ms: list[float] = field(default_factory=list)
    failures: int = 0


class LoopProbe:
    """Probes each server (name -> (host, port)) from its own thread until `stop`; `lags` then gives each server's
    answer times in ms."""

    def __init__(self, servers: dict[str, tuple[str, int]], period_s: float):
        self.period_s = period_s
        self._servers = [_Server(n, h, p) for n, (h, p) in sorted(servers.items())]
        self._done = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> LoopProbe:
        for server in self._servers:
            thread = threading.Thread(target=self._probe, args=(server,), name=f"loop-probe-{server.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        for thread in self._threads:
            thread.join(TIMEOUT_S + 1)

    def _probe(self, server: _Server) -> None:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=TIMEOUT_S)
        try:
            while not self._done.is_set():
                began = time.perf_counter()
                try:
                    connection.request("GET", PROBE_PATH)
                    connection.getresponse().read()
                    server.times_ms.append((time.perf_counter() - began) * 1000)
                except (OSError, http.client.HTTPException):
                    server.failures += 1
                    connection.close()
                    connection = http.client.HTTPConnection(server.host, server.port, timeout=TIMEOUT_S)
                left = self.period_s - (time.perf_counter() - began)
                self._done.wait(max(0.0, left))
        finally:
            connection.close()

    def lags(self) -> dict[str, dict[str, float | int]]:
        """Per server: its probes' answer times (ms, sorted, rounded) and how many got no answer."""
        return {s.name: {"ms": sorted(round(t, 2) for t in s.times_ms), "failed": s.failures} for s in self._servers}
