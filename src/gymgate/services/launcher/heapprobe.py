"""What a Gym server's heap holds, asked from outside (the load run's leak oracle, gymgate.load.driver): resident
memory read from /proc moves by megabytes whenever an allocator takes or returns an arena, which hides a leak of a
few KiB a rollout for hundreds of rollouts; the bytes the heap holds after a full collection do not move unless
something keeps them.

A server the launcher forks (zygote.py) with `GYMGATE_HEAP_PROBE` set to a folder listens on `<folder>/<pid>` from a
thread of its own; each connection gets one reading: a full collection, then the bytes in Python's small-object
allocator's allocated blocks (CPython's own statistics) plus the bytes the C allocator has handed out across all its
arenas, mmapped chunks included (glibc's malloc_info). Only the standard library and libc: it runs inside Gym's
servers, on every release. A server that cannot read its heap answers why; the caller then judges resident memory
alone."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

VARIABLE = "GYMGATE_HEAP_PROBE"  # the folder a forked server listens in (set by the load worker, for its Gyms only)
TIMEOUT_S = 10.0  # one reading's bound (a collection of a large heap takes a fraction of a second)
DUMP_BYTES = 1 << 20  # room for one statistics dump (a few KiB; malloc_info grows with the arenas)
_PYMALLOC = re.compile(rb"# bytes in allocated blocks\s*=\s*([\d,]+)")
_TOTAL = re.compile(rb'<total type="(\w+)" count="\d+" size="(\d+)"/>')
_CURRENT = re.compile(rb'<system type="current" size="(\d+)"/>')


def _dump(write: Callable[[int], object]) -> bytes:
    """What `write(FILE *)` prints, through a stream on a buffer of our own (never a descriptor the server uses)."""
    libc = ctypes.CDLL(None)
    libc.fmemopen.restype = ctypes.c_void_p
    libc.fmemopen.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    buffer = ctypes.create_string_buffer(DUMP_BYTES)
    stream = libc.fmemopen(buffer, DUMP_BYTES, b"w")
    if not stream:
        raise OSError(ctypes.get_errno(), "fmemopen failed")
    try:
        write(stream)
    finally:
        libc.fclose(stream)
    return buffer.value


def pymalloc_bytes() -> int:
    """Bytes in the small-object allocator's allocated blocks (CPython's _PyObject_DebugMallocStats)."""
    stats = ctypes.pythonapi._PyObject_DebugMallocStats
    stats.argtypes = [ctypes.c_void_p]
    found = _PYMALLOC.search(_dump(stats))
    if found is None:
        raise RuntimeError("CPython's allocator statistics name no allocated blocks")
    return int(found.group(1).replace(b",", b""))


def malloc_bytes() -> int:
    """Bytes the C allocator has handed out: every arena's system memory less its free chunks, plus mmapped chunks
    (glibc's malloc_info)."""
    libc = ctypes.CDLL(None)
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    text = _dump(lambda stream: libc.malloc_info(0, stream))
    totals = {kind.decode(): int(size) for kind, size in _TOTAL.findall(text)}
    current = _CURRENT.findall(text)
    if not current or not {"fast", "rest", "mmap"} <= set(totals):
        raise RuntimeError("malloc_info gave no totals")
    return int(current[-1]) - totals["fast"] - totals["rest"] + totals["mmap"]


def reading() -> dict[str, int]:
    """One reading of this process's heap, after a full collection."""
    gc.collect()
    python, c = pymalloc_bytes(), malloc_bytes()
    return {"heap_bytes": python + c, "pymalloc_bytes": python, "malloc_bytes": c}


def listen(folder: str) -> None:
    """In a server: answer each connection on `<folder>/<pid>` with one reading, from a daemon thread."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(folder, str(os.getpid())))
    listener.listen(4)
    threading.Thread(target=_serve, args=(listener,), name="gymgate-heap-probe", daemon=True).start()


def _serve(listener: socket.socket) -> None:
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                answer: dict = reading()
            except Exception as exc:  # noqa: BLE001 - said to the caller, which then judges resident memory alone
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(answer).encode() + b"\n")


def read(folder: str, pids: Iterable[int]) -> dict[str, int | str]:
    """Every listening server's reading among `pids`, all asked at once (each collects in its own process), summed:
    {"heap_bytes", "servers"}, or {"error"} when one that listens cannot answer (a partial sum would read as memory
    given back)."""
    listening = [pid for pid in pids if os.path.exists(os.path.join(folder, str(pid)))]
    if not listening:
        return {"error": "no server listens"}
    with ThreadPoolExecutor(max_workers=min(16, len(listening)), thread_name_prefix="heap-read") as pool:
        answers = list(pool.map(lambda pid: (pid, _ask(os.path.join(folder, str(pid)))), listening))
    total = 0
    for pid, answer in answers:
        if "heap_bytes" not in answer:
            return {"error": f"server {pid}: {answer.get('error', 'no reading')}"}
        total += int(answer["heap_bytes"])
    return {"heap_bytes": total, "servers": len(answers)}


def _ask(path: str) -> dict:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(TIMEOUT_S)
            conn.connect(path)
            return json.loads(conn.makefile("rb").readline() or b"{}")
    except (OSError, ValueError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
