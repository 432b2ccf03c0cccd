"""A process that has loaded agentsvc once and forks an `agentsvc` command for each request.

Started by scripts/test.sh for a whole run (or by tests/support/warm.py for one test
process) with the path of a Unix socket; it exits when its stdin ends. Each request is a line
of JSON (`args`, `cwd`, `env`; `netns`, a network namespace to run in) with the child's
stdin, stdout and stderr passed as file descriptors; the answer is the child's pid, then,
when it ends, its exit status as `subprocess` gives it (negative: the signal that ended
it). The child runs `main(args)`, as `python -m agentsvc` does, in a process of its own:
its signals, listening sockets, locks and exit are real; only the interpreter's start and
the imports (about 1.5 s of CPU a command) are shared.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading

import agentsvc.app  # noqa: F401 (loaded once, here, for every command forked from here)
import agentsvc.cli
from agentsvc.api import all_endpoints

# The API's modules load when a server first builds its routes (0.8 s of CPU: their models),
# not with the package: loaded here, no forked `serve` pays for them.
all_endpoints()


def _enter_netns(name: str) -> None:
    """Join the named network namespace (`ip netns add NAME`), as `ip netns exec` does:
    the process sees only that namespace's interfaces, addresses and routes."""
    import ctypes

    clone_newnet = 0x40000000
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, clone_newnet) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name}")
    finally:
        os.close(fd)


def _child(request: dict, fds: list[int]) -> None:
    if request.get("netns"):  # tests/support/netns.py: a host of its own
        _enter_netns(request["netns"])
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    lower = request.get("nice", 0) - os.nice(0)
    if lower > 0:  # as niced as the test process that asked (none may raise its priority)
        os.nice(lower)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [agentsvc.cli.__file__, *request["args"]]
    code = 1
    try:
        code = agentsvc.cli.main(request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _report_exit(pid: int, conn: socket.socket) -> None:
    _, status = os.waitpid(pid, 0)
    with conn:
        conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())


def _exit_with_the_test_process(path: str) -> None:
    sys.stdin.read()  # the end of the pipe: the test process has ended
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # its folder of one socket
    os._exit(0)


def serve(path: str) -> None:
    threading.Thread(target=_exit_with_the_test_process, args=(path,), daemon=True).start()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        while not message.endswith(b"\n"):  # the descriptors came with the first part
            message += conn.recv(1 << 16)
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            listener.close()
            conn.close()
            _child(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        threading.Thread(target=_report_exit, args=(pid, conn), daemon=True).start()


if __name__ == "__main__":
    serve(sys.argv[1])
