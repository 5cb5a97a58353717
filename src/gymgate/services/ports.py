"""Loopback ports chosen at run time, never assumed free.

Gym picks its servers' ports at random inside a range by test-binding them, which races between
concurrent Gyms. Each Gym instance therefore gets its own random band, above Ray's worker-port range
(10002-19999) and below the kernel's ephemeral range (32768+).
"""

from __future__ import annotations

import random
import socket

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


def port_band(rng: random.Random | None = None) -> tuple[int, int]:
    """A random [low, high) band of BAND_WIDTH ports for one Gym instance's servers."""
    rng = rng or random.SystemRandom()
    slots = (BAND_HIGH - BAND_LOW) // BAND_WIDTH
    low = BAND_LOW + rng.randrange(slots) * BAND_WIDTH
    return low, low + BAND_WIDTH


def free_port_in(low: int, high: int, rng: random.Random | None = None) -> int:
    rng = rng or random.SystemRandom()
    candidates = list(range(low, high))
    rng.shuffle(candidates)
    for port in candidates:
        if is_free(port):
            return port
    raise OSError(f"no free port in {low}-{high}")
