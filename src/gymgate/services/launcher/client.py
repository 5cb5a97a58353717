"""The `python` a Gym server's venv provides when a launcher serves the run: hands `python app.py` to the zygote
(services/launcher/zygote.py), which forks it from a process that has already imported the heavy third-party
modules, then stands in for the server until it exits — same exit status, signals passed on.

Stdlib only, run with `-I -S` (no site, no PYTHON* variables): it must start in milliseconds. Without a zygote
(the variable unset, the socket gone, a refused request) it execs the real interpreter with the same arguments:
exactly what Gym would have run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys

SOCKET_VARIABLE = "GYMGATE_LAUNCHER_SOCKET"
PYTHON_VARIABLE = "GYMGATE_LAUNCHER_PYTHON"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
CONNECT_TIMEOUT_S = 5.0


def send_message(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """One length-prefixed JSON message, with file descriptors attached when given."""
    body = json.dumps(message).encode()
    data = struct.pack("!I", len(body)) + body
    if fds:
        socket.send_fds(conn, [data], fds)
    else:
        conn.sendall(data)


def receive_message(conn: socket.socket, max_fds: int = 0) -> tuple[dict | None, list[int]]:
    """The next message and the descriptors that came with it; (None, []) when the peer closed."""
    if max_fds:
        head, fds, _flags, _addr = socket.recv_fds(conn, 4, max_fds)
    else:
        head, fds = conn.recv(4), []
    while head and len(head) < 4:
        more = conn.recv(4 - len(head))
        if not more:
            return None, fds
        head += more
    if not head:
        return None, fds
    (size,) = struct.unpack("!I", head)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            return None, fds
        body += chunk
    return json.loads(body), fds


def _exec_real(argv: list[str]) -> None:
    python = os.environ.get(PYTHON_VARIABLE) or sys.executable
    os.execv(python, [python, *argv])


class Relay:
    """Signals to this client, for the process it stands for. Installed before the request goes out: a signal that
    comes before the fork is known is held and passed on once it is (or, when no fork comes, delivered to this
    process as it would have been without the relay), never lost in between."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.held: list[int] = []
        self.before = {number: signal.signal(number, self._on_signal) for number in FORWARDED}

    def _on_signal(self, number: int, _frame) -> None:
        if self.pid is None:
            self.held.append(number)
        else:
            _forward(self.pid, number)

    def forked(self, pid: int) -> None:
        self.pid = pid
        for number in self.held:
            _forward(pid, number)

    def undo(self) -> None:
        """No fork: the dispositions this process started with, and the held signals delivered under them."""
        for number, handler in self.before.items():
            signal.signal(number, handler)
        for number in self.held:
            os.kill(os.getpid(), number)


def main(argv: list[str]) -> int:
    paths = [p for p in os.environ.get(SOCKET_VARIABLE, "").split(os.pathsep) if p]
    if not paths or not argv or not argv[0].endswith(".py") or not os.path.isfile(argv[0]):
        _exec_real(argv)  # only `python script.py …` is forked: `-c`, `-m` and the rest run as they would
    relay = Relay()
    ignored = [number for number, handler in relay.before.items() if handler == signal.SIG_IGN]
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "pgid": os.getpgrp(), "ignored": ignored}
    for path in paths:  # the first zygote that imported as this process would have takes it (service.py)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(CONNECT_TIMEOUT_S)
        try:
            conn.connect(path)
            send_message(conn, request, [0, 1, 2])
            started, _ = receive_message(conn)
        except OSError:
            started = None
        if started and "pid" in started:
            break
        conn.close()
    else:  # no zygote, or each refused: not forkable as this process would start
        relay.undo()
        _exec_real(argv)
    pid = int(started["pid"])
    relay.forked(pid)
    conn.settimeout(None)
    ended, _ = receive_message(conn)
    if ended is None:  # the zygote went away: stand in for the server until it ends (its status is lost with it)
        _wait_gone(pid)
        return 1
    if ended.get("signal"):
        signal.signal(ended["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), ended["signal"])
    return int(ended.get("code", 1))


def _wait_gone(pid: int) -> None:
    """Until process `pid` (not a child of this one) has ended."""

    try:
        fd = os.pidfd_open(pid)
    except OSError:  # already gone
        return
    try:
        while not select.select([fd], [], [], 1.0)[0]:
            pass
    finally:
        os.close(fd)


def _forward(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
