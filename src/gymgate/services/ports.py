"""Loopback ports chosen at run time, never assumed free.

Gym picks its servers' ports at random inside a range by test-binding them and binds them seconds later,
when the server process has imported; two Gyms picking in the same range race in that window (measured: an
agent then called another Gym's server). Each Gym instance therefore leases a band of its own, above Ray's
worker-port range (10002-19999) and below the kernel's ephemeral range (32768+): an exclusive flock on one file
per band, held while the Gym lives, so no two Gyms of any gymgate run on this machine share a band. The kernel
drops the lock when its holder dies, so a crashed run never leaks a band.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

BAND_LOW, BAND_HIGH = 20000, 32000
BAND_WIDTH = 200


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """Any free port the kernel hands out."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_port_in(low: int, high: int, rng: random.Random | None = None) -> int:
    rng = rng or random.SystemRandom()
    candidates = list(range(low, high))
    rng.shuffle(candidates)
    for port in candidates:
        if is_free(port):
            return port
    raise OSError(f"no free port in {low}-{high}")


class BandLease:
    """A band of ports that no other gymgate Gym on this machine uses while the lease is held."""

    def __init__(self, low: int, high: int, fd: int):
        self.low, self.high, self._fd = low, high, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the flock
            self._fd = -1


def lease_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"gymgate-ports-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def lease_band(rng: random.Random | None = None, directory: Path | None = None) -> BandLease:
    """Lease a free band, trying them in random order; OSError when every band is held."""
    rng = rng or random.SystemRandom()
    directory = directory or lease_dir()
    slots = list(range((BAND_HIGH - BAND_LOW) // BAND_WIDTH))
    rng.shuffle(slots)
    for slot in slots:
        low = BAND_LOW + slot * BAND_WIDTH
        fd = os.open(directory / f"{low}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return BandLease(low, low + BAND_WIDTH, fd)
    raise OSError(f"every port band in {BAND_LOW}-{BAND_HIGH} is leased by running Gyms")
