"""Hosts of a test cluster as Linux network namespaces on one bridge (needs root).

`Hosts(["pg", "redis", "app1"])` builds, in the root namespace, a bridge with the address
10.N.0.1/24 (N chosen among the subnets nothing on this machine uses) and, for each host,
a namespace `agentsvc-PID-HOST` joined to the bridge by a veth pair: `lo` up, its own
address (10.N.0.2, .3, ... in the order given) and a default route through the bridge. The
root namespace (the test, nginx, a webhook receiver on the bridge's address) reaches every
host, and every host reaches the others and the root namespace.

Commands run in a host with `popen(host, argv)` (`ip netns exec`); warm `agentsvc`
commands join the namespace themselves (`warm.popen(..., netns=hosts.netns(host))`).
`cut(host, address)` makes `address` unreachable from `host` (a blackhole route: packets
are dropped, connections hang as on a cut cable); `mend` takes the route away again.
`close()` always kills what runs in the namespaces and removes them and the bridge; a
build first removes what test processes that no longer run left behind.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

PREFIX = "agentsvc-"
BRIDGE_PREFIX = "agb"


def unavailable() -> str | None:
    """Why namespaces cannot be built here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is missing"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_all_in(netns: str) -> None:
    found = _ip("netns", "pids", netns, check=False).stdout.split()
    for pid in found:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def remove_leftovers() -> None:
    """Remove the namespaces and bridges of test processes that ended without cleaning up
    (killed with SIGKILL): their names carry the test process's pid."""
    for name in Path("/run/netns").glob(f"{PREFIX}*") if Path("/run/netns").is_dir() else []:
        found = re.match(rf"{PREFIX}(\d+)-", name.name)
        if found and not _alive(int(found.group(1))):
            _kill_all_in(name.name)
            _ip("netns", "del", name.name, check=False)
    links = _ip("-o", "link", "show", "type", "bridge", check=False).stdout
    for found in re.finditer(rf"^\d+: ({BRIDGE_PREFIX}(\d+)):", links, re.MULTILINE):
        if not _alive(int(found.group(2))):
            _ip("link", "del", found.group(1), check=False)


def _free_subnet(seed: int) -> int:
    """A second octet N such that nothing here uses 10.N.0.0/16 (addresses or routes)."""
    used_text = _ip("-o", "-4", "addr").stdout + _ip("-4", "route").stdout
    used = {int(n) for n in re.findall(r"\b10\.(\d+)\.", used_text)}
    for step in range(200):
        candidate = 20 + (seed + step) % 200
        if candidate not in used:
            return candidate
    raise RuntimeError("no free 10.N.0.0/16 subnet for the test's bridge")


class Hosts:
    """Network namespaces on one bridge (see the module's docstring)."""

    def __init__(self, names: list[str]):
        self.names = list(names)
        pid = os.getpid()
        self.bridge = f"{BRIDGE_PREFIX}{pid}"
        self._tag = f"{PREFIX}{pid}-"
        self.octet = 0
        self._built: list[str] = []
        self._processes: list[subprocess.Popen] = []
        self._cuts: set[tuple[str, str]] = set()

    @property
    def gateway(self) -> str:
        """The bridge's address: the root namespace as the hosts see it."""
        return f"10.{self.octet}.0.1"

    def address(self, host: str) -> str:
        return f"10.{self.octet}.0.{self.names.index(host) + 2}"

    def netns(self, host: str) -> str:
        return self._tag + host

    def build(self) -> Hosts:
        """Make the bridge and the hosts (close() undoes whatever part was made)."""
        remove_leftovers()
        self.octet = _free_subnet(os.getpid())
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, host in enumerate(self.names):
            netns, veth = self.netns(host), f"agv{os.getpid()}{index}"
            _ip("netns", "add", netns)
            self._built.append(netns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
            _ip("link", "set", veth, "master", self.bridge, "up")
            inside = ("-n", netns)
            _ip(*inside, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            _ip(*inside, "link", "set", "eth0", "up")
            _ip(*inside, "link", "set", "lo", "up")
            _ip(*inside, "route", "add", "default", "via", self.gateway)
        return self

    def command(self, host: str, argv: list[str]) -> list[str]:
        """`argv` as run in `host`."""
        return ["ip", "netns", "exec", self.netns(host), *argv]

    def popen(self, host: str, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start `argv` in `host` (killed by close() if still running)."""
        process = subprocess.Popen(self.command(host, argv), **kwargs)
        self._processes.append(process)
        return process

    def run(self, host: str, argv: list[str], timeout: float = 60) -> str:
        """Run `argv` in `host` to its end; its output, or RuntimeError with its errors."""
        done = subprocess.run(
            self.command(host, argv), capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} in {host}: {done.stderr.strip() or done.stdout}")
        return done.stdout

    def cut(self, host: str, address: str) -> None:
        """Make `address` unreachable from `host`: its packets there are dropped."""
        _ip("-n", self.netns(host), "route", "add", "blackhole", f"{address}/32")
        self._cuts.add((host, address))

    def mend(self, host: str, address: str) -> None:
        """Undo `cut`."""
        _ip("-n", self.netns(host), "route", "del", "blackhole", f"{address}/32")
        self._cuts.discard((host, address))

    def close(self) -> None:
        """Kill everything running in the hosts; remove them and the bridge."""
        for process in self._processes:
            if process.poll() is None:
                process.kill()
                process.wait(10)
        for netns in self._built:
            _kill_all_in(netns)
            _ip("netns", "del", netns, check=False)
        self._built.clear()
        _ip("link", "del", self.bridge, check=False)
