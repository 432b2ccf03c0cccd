"""`agentsvc` commands in processes of their own, forked from a process that has already
loaded the package (tests/support/zygote.py), with `subprocess.Popen`'s interface.

A new interpreter importing agentsvc costs about 1.5 s of CPU; the suite starts dozens of
`agentsvc serve` processes (the command line's tests, restarts, backups). Each child is a
real process: its own pid, signals, sockets, locks and exit status; what it inherits from
the loaded process is only what importing the package made (no thread, loop or file).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_ZYGOTE = Path(__file__).with_name("zygote.py")
_lock = threading.Lock()
_started: dict[str, object] = {}


def _socket_path() -> str:
    """The run's zygote (scripts/test.sh starts one for all its test processes and names its
    socket in TEST_ZYGOTE_SOCKET), else this test process's own, started on first use and
    stopped at its exit."""
    shared = os.environ.get("TEST_ZYGOTE_SOCKET")
    if shared:
        return shared
    with _lock:
        if "path" not in _started:
            folder = tempfile.mkdtemp(prefix="agentsvc-zygote-")
            path = os.path.join(folder, "s")
            # Its stdin is a pipe from this process: when this process ends, however it
            # ends, the zygote reads the end of it and exits too.
            proc = subprocess.Popen(
                [sys.executable, str(_ZYGOTE), path],
                stdout=subprocess.PIPE,
                stdin=subprocess.PIPE,
                text=True,
                cwd=folder,
            )
            assert proc.stdout.readline().strip() == "ready", "the zygote did not start"

            def stop() -> None:
                proc.kill()
                proc.wait()
                shutil.rmtree(folder, ignore_errors=True)

            atexit.register(stop)
            _started["path"] = path
        return _started["path"]  # type: ignore[return-value]


class WarmProcess:
    """`agentsvc ARGS` as `subprocess.Popen([python, -m, agentsvc, *ARGS], ...)` would run it
    (the arguments this suite uses: cwd, env, text, and each stream PIPE, DEVNULL or None)."""

    def __init__(
        self, args, *, cwd, env, stdin=None, stdout=None, stderr=None, text=False, netns=None
    ):
        self.args = list(args)
        self.returncode: int | None = None
        ours, theirs = [], []
        self.stdin = self.stdout = self.stderr = None
        for number, how in enumerate((stdin, stdout, stderr)):
            if how == subprocess.PIPE:
                read, write = os.pipe()
                child, mine = (read, write) if number == 0 else (write, read)
                theirs.append(child)
                ours.append(child)
                mode = ("w" if number == 0 else "r") + ("" if text else "b")
                setattr(self, ("stdin", "stdout", "stderr")[number], os.fdopen(mine, mode))
            elif how == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR)
                theirs.append(fd)
                ours.append(fd)
            else:
                theirs.append(number)  # inherited, as Popen's None
        # The child is as niced as this process (scripts/test.sh nices the workers' phase).
        asked = {"args": self.args, "cwd": str(cwd), "env": dict(env), "nice": os.nice(0)}
        if netns:  # a network namespace to run in (tests/support/netns.py)
            asked["netns"] = netns
        request = json.dumps(asked) + "\n"
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn.connect(_socket_path())
        socket.send_fds(self._conn, [request.encode()], theirs)
        for fd in ours:
            os.close(fd)
        self._answers = self._conn.makefile("r")
        self.pid = int(self._answers.readline())

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._ended(self._answers.readline())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._conn.settimeout(timeout)
            try:
                line = self._answers.readline()
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            self._ended(line)
        return self.returncode  # type: ignore[return-value]

    def _ended(self, line: str) -> None:
        self.returncode = int(line)
        self._answers.close()
        self._conn.close()

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(15)

    def kill(self) -> None:
        self.send_signal(9)

    def communicate(self, input=None, timeout: float | None = None):
        """Write `input`, read both pipes to their end, then wait, as Popen's does."""
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        found: dict[str, object] = {}

        def drain(name: str) -> None:
            stream = getattr(self, name)
            found[name] = stream.read() if stream is not None else None
            if stream is not None:
                stream.close()

        readers = [threading.Thread(target=drain, args=(n,)) for n in ("stdout", "stderr")]
        for reader in readers:
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return found["stdout"], found["stderr"]


def popen(argv: list[str], *, cwd=None, env=None, **streams) -> WarmProcess:
    """`subprocess.Popen([sys.executable, "-m", "agentsvc", *args], ...)`, forked warm."""
    assert argv[1:3] == ["-m", "agentsvc"], argv
    return WarmProcess(
        argv[3:], cwd=cwd or os.getcwd(), env=os.environ if env is None else env, **streams
    )
