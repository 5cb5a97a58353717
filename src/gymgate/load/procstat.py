"""What a Gym instance's servers cost, read from the kernel's own accounting (/proc): CPU seconds (not wall time: a
noisy 2-core machine cannot judge wall time, but a process's utime + stime barely moves with its neighbours), resident
memory, open file descriptors and processes. A server's tree is counted whole: the children a verifier forks are
Gym's cost too, and a child never reaped is still a process here (a zombie)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Usage:
    """One reading of a set of process trees."""

    cpu_s: float  # user + system CPU of every live process, and of the children each has reaped
    rss_bytes: int
    anon_bytes: int  # resident and not backed by a file (statm's resident - shared): what a leak grows; file pages
    # (libraries, mapped files) come and go with the page cache and are not the Gym's to keep
    fds: int  # open descriptors that are not sockets: files, pipes, event and timer descriptors
    sockets: int  # kept apart: connection pools open and close them by the dozen as their keep-alives expire
    processes: int  # live processes of the trees, zombies included (roots too)

    def to_json(self) -> dict[str, float | int]:
        return {
            "cpu_s": round(self.cpu_s, 4),
            "rss_bytes": self.rss_bytes,
            "anon_bytes": self.anon_bytes,
            "fds": self.fds,
            "sockets": self.sockets,
            "processes": self.processes,
        }


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None when the process is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is not None:
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def group(pgid: int) -> list[int]:
    """The processes of process group `pgid` but its leader: a Gym actor leads its instance's group, and every server
    it starts joins it, forked by a launcher or not (services/gym_actor.py)."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and int(entry.name) != pgid:
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def trees(roots: Iterable[int], tree: dict[int, list[int]] | None = None) -> list[int]:
    """The roots and every descendant of theirs alive now (`tree`: a reading of who is whose child, else one now)."""
    tree = _children() if tree is None else tree
    found: dict[int, None] = {}
    todo = [r for r in roots if r]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found[pid] = None
        todo.extend(tree.get(pid, ()))
    return list(found)


def descriptors(pid: int) -> tuple[int, int]:
    """(descriptors that are not sockets, sockets) process `pid` holds open (0, 0 for a zombie or one gone)."""
    folder = PROC / str(pid) / "fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return 0, 0
    sockets = 0
    for name in names:
        with contextlib.suppress(OSError):  # closed since the listing
            sockets += os.readlink(folder / name).startswith("socket:")
    return len(names) - sockets, sockets


def _anon_pages(pid: int) -> int:
    """Resident pages of `pid` that no file backs (statm: resident minus shared), 0 when it is gone."""
    try:
        fields = (PROC / str(pid) / "statm").read_text().split()
    except OSError:
        return 0
    return int(fields[1]) - int(fields[2])


def usage(roots: Iterable[int]) -> Usage:
    cpu, rss, anon, fds, sockets, count = 0.0, 0, 0, 0, 0, 0
    for pid in trees(roots):
        fields = _stat(pid)
        if fields is None:
            continue
        count += 1
        # utime, stime, cutime, cstime are fields 14-17 of stat; here (state is field 3) at 11-14.
        cpu += sum(int(x) for x in fields[11:15]) / TICK
        rss += int(fields[21]) * PAGE  # field 24, rss in pages
        anon += _anon_pages(pid) * PAGE
        files, connections = descriptors(pid)
        fds, sockets = fds + files, sockets + connections
    return Usage(cpu, rss, anon, fds, sockets, count)


def rss_by_root(roots: dict[str, int]) -> dict[str, int]:
    """Resident memory of each named process tree (a server and what it forked), from one reading of /proc: what
    each of an instance's servers holds, beside the instance's total."""
    tree = _children()
    out = {}
    for name, root in roots.items():
        fields = (_stat(pid) for pid in trees([root], tree))
        out[name] = sum(int(f[21]) * PAGE for f in fields if f is not None)
    return out
