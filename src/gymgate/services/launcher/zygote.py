"""A pre-imported parent that forks Gym's servers: it imports the third-party modules every server imports (declared
in preload.toml), then serves `python app.py` requests from the launcher client (client.py) by forking a child that
becomes exactly that process — the request's working directory, environment, argv, stdin/stdout/stderr and
sys.path — and runs the script as `__main__`. Each server then pays for its own code only.

Only third-party modules are preloaded, never nemo_gym: Gym computes paths from the working directory when it is
imported (nemo_gym/__init__.py's WORKING_DIR), and that differs per server. A module in the list must not read the
working directory or argv when it is imported, and reads the environment only through the variables preload.toml
declares: a request whose values of those differ from the zygote's is refused, and its client runs the real
interpreter instead.

Single-threaded on purpose (forking a threaded process is unsafe): one select loop accepts requests and reaps
children, telling each client how its server ended. A run's zygotes (service.py) are forked from one common parent,
the stem, which first imports what none of them imports differently (preload.toml `shared`): each zygote then sets its
own defaults and imports the rest. Each server a zygote forks joins the process group of the client that asked for
it (its Gym actor's group), so the actor's stop (one kill of that group) stops exactly its own servers, as before.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import importlib
import importlib.machinery
import os
import selectors
import signal
import socket
import sys
import traceback
import types
import warnings

from gymgate.services.launcher import ZygoteSpec, heapprobe, shared, zygotes
from gymgate.services.launcher.client import FORWARDED, receive_message, send_message

REAP_INTERVAL_S = 0.05


def preload(modules: list[str]) -> dict[str, str]:
    """Import each module; what failed and why (a module a Gym does not ship is skipped, not fatal)."""
    failed = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any import failure only means the server imports it itself
            failed[name] = f"{type(exc).__name__}: {exc}"
    return failed


def script_path(argv: list[str], cwd: str, env: dict[str, str]) -> list[str]:
    """sys.path as `python SCRIPT` would start it: the script's folder, PYTHONPATH, then the interpreter's own."""
    script_dir = os.path.dirname(os.path.join(cwd, argv[0])) if argv else cwd
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    base = [p for p in sys.path if p not in BASE_EXCLUDED]
    return [os.path.realpath(script_dir), *extra, *base]


BASE_EXCLUDED: set[str] = set()  # the zygote's own script folder and PYTHONPATH entries (set in serve)


def run_as_main(path: str) -> None:
    """Run a script as `python path` does: a fresh `__main__` module, __file__ absolute, argv left as given."""

    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path,
        __builtins__=builtins,
        __cached__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __spec__=None,
    )
    sys.modules["__main__"] = main
    with open(path, "rb") as source:
        code = compile(source.read(), path, "exec")
    exec(code, main.__dict__)


def join_group(request: dict, conn: socket.socket) -> None:
    """In the forked child: move into the process group of the client that asked (its Gym actor's group), so that
    stopping that group stops this server as it would have stopped `python app.py`. A client already gone (its group
    stopped while the fork was under way) means no one wants this server: it ends at once."""
    with contextlib.suppress(OSError):
        os.setpgid(0, int(request["pgid"]))
    conn.setblocking(False)
    try:
        gone = conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        gone = False
    except OSError:
        gone = True
    conn.close()
    if gone:
        os._exit(1)


def become(request: dict, fds: list[int]) -> None:
    """In the forked child: turn into the requested server and run it; never returns."""
    code = 0
    try:
        ignored = set(request.get("ignored", []))  # as a fresh interpreter: what its parent ignored stays ignored
        for number in (*FORWARDED, signal.SIGCHLD):
            fresh = signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL
            signal.signal(number, signal.SIG_IGN if number in ignored else fresh)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # blocked since the fork: what came meanwhile lands here
        for target, fd in zip((0, 1, 2), fds, strict=False):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = list(request["argv"])
        sys.argv = argv
        sys.path[:] = script_path(argv, request["cwd"], request["env"])
        if request["env"].get(heapprobe.VARIABLE):  # a load run reads this server's heap (heapprobe.py)
            try:
                heapprobe.listen(request["env"][heapprobe.VARIABLE])
            except OSError as exc:  # the run judges resident memory alone; the server runs as asked
                print(f"launcher: no heap probe: {exc}", file=sys.stderr, flush=True)
        run_as_main(os.path.join(request["cwd"], argv[0]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # as python does: the traceback, then death by the signal itself
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 128 + signal.SIGINT
    except BaseException:  # noqa: BLE001 - the server's own failure, reported as python would
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


NATIVE_POOLS = ("openblas", "libgomp", "libomp", "libiomp")  # libraries that size a thread pool as they load


def stem(folder: str, names: list[str], listed: list[str]) -> int:
    """Import the shared stage (or `listed` instead, with nothing more in each zygote: tests), then fork the zygotes
    `names`, each serving `folder/<name>`; returns the status of the first of them to end. A shared stage that brought
    a module or library a zygote must import itself (its values could differ) starts no zygote."""

    # numpy's OpenBLAS, pandas' and pyarrow's pools start native threads at import; each registers fork handlers.
    # Python warns on every fork of a process with threads: not into each server's log. (Under review: issue 29.)
    warnings.filterwarnings("ignore", message=r"This process .* is multi-threaded", category=DeprecationWarning)
    BASE_EXCLUDED.update({sys.path[0], *os.environ.get("PYTHONPATH", "").split(os.pathsep)})
    gc.disable()  # importing is allocating: no collection can free much of it (~20 % of the imports' CPU); see serve
    stage = shared()
    before = set(sys.modules)
    failed = preload(listed or list(stage.modules))
    if failed:
        print(f"launcher: not preloaded: {failed}", file=sys.stderr, flush=True)
    with open("/proc/self/maps") as maps:
        mapped = maps.read()
    came = sorted(stage.forbidden & {m.split(".")[0] for m in set(sys.modules) - before})
    came += [lib for lib in NATIVE_POOLS if lib in mapped]
    if came:
        print(
            f"launcher: the shared modules brought {came}, which each zygote must import itself "
            "(preload.toml `pooled`): no zygote started; GYMGATE_LAUNCHER=exec runs without them",
            file=sys.stderr,
            flush=True,
        )
        return 2
    children = {}
    for name in names:
        pid = os.fork()
        if pid == 0:
            try:
                spec = zygotes()[name]
                for key, value in spec.defaults.items():  # unless the run sets them itself
                    os.environ.setdefault(key, value)
                serve(os.path.join(folder, name), spec, [] if listed else list(spec.modules))
            except BaseException:  # noqa: BLE001 - reported in the launcher's log, the zygote ends
                traceback.print_exc()
            finally:
                os._exit(1)
        children[pid] = name
    pid, status = os.wait()
    code = os.waitstatus_to_exitcode(status)
    print(f"launcher {children.get(pid, pid)}: ended ({code})", file=sys.stderr, flush=True)
    return code or 1


def serve(socket_path: str, spec: ZygoteSpec, modules: list[str]) -> None:
    """Preload `modules`, listen on `socket_path`, fork a process per request `spec` accepts until killed."""
    own = spec.read_at_import(dict(os.environ))  # before preloading: what the imports below will have read
    failed = preload(modules)
    if failed:
        print(f"launcher {spec.name}: not preloaded: {failed}", file=sys.stderr, flush=True)
    gc.freeze()  # what was imported is kept for good: collections from here on (this zygote's, a child's) skip it
    gc.enable()  # as in a fresh interpreter, before the first fork
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    print(f"launcher {spec.name}: ready ({len(modules) - len(failed)} modules preloaded)", file=sys.stderr, flush=True)
    while True:
        for _key, _ in selector.select(timeout=REAP_INTERVAL_S):
            conn, _addr = listener.accept()
            request, fds = receive_message(conn, max_fds=3)
            if request is None or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            differing = sorted(set(own.items()) ^ set(spec.read_at_import(request["env"]).items()))
            if differing:  # not the process a fresh interpreter would be: the client runs one
                names = sorted({name for name, _value in differing})
                refusal = f"launcher {spec.name}: refused {request['argv'][:1]}: differs in {names}"
                print(f"{refusal} (the next zygote or a fresh interpreter starts it)", file=sys.stderr, flush=True)
                for fd in fds:
                    os.close(fd)
                with contextlib.suppress(OSError):
                    send_message(conn, {"refused": names})
                conn.close()
                continue
            signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # the child unblocks once its handlers are set
            gc.freeze()  # what the zygote holds is never scanned (nor copied on write) by a child's collections
            pid = os.fork()
            if pid == 0:
                listener.close()
                selector.close()
                for other in children.values():
                    other.close()
                join_group(request, conn)
                become(request, fds)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
            for fd in fds:
                os.close(fd)
            children[pid] = conn
            with contextlib.suppress(OSError):  # its client is gone already: the child sees that and ends
                send_message(conn, {"pid": pid})
        _reap(children)


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        ended = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"code": os.WEXITSTATUS(status)}
        with contextlib.suppress(OSError):
            send_message(conn, ended)
        conn.close()


if __name__ == "__main__":  # zygote.py FOLDER NAME[,NAME…] [MODULE …]: each zygote NAME serves FOLDER/NAME
    _, folder, names, *listed = sys.argv
    sys.exit(stem(folder, names.split(","), listed))  # a socket appears once its zygote's preloading is done
