"""Hosts on one machine: network namespaces on a bridge, their links cut and impaired at will.

A lab is one switch (a namespace holding a bridge) and hosts (one namespace each), every host
joined to the bridge by a veth pair and given an address in 198.18.0.0/24, RFC 2544's range for
benchmark networks. Nothing is made in the machine's own namespace and no namespace has a route
out, so a lab can reach nothing but itself. Namespace names carry the owner's pid and a random
part (``twh-<pid>-<hex>-<host>``): two runs never collide, and a lab whose owner is gone is
recognised as stale and removed by the next one (``remove_stale``).

Every lab is removed when its owner exits, including by SIGTERM (``remove_all`` runs from
``atexit`` and the signal handler): its processes are killed by pid, then its namespaces deleted.
This module needs iproute2 and root; it does not import pytest, so ``bench/`` uses it too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

PREFIX = "twh-"
SUBNET = "198.18.0"
_IMPAIR = Path(__file__).with_name("impair.py")
_LABS: list[Lab] = []


class LabError(RuntimeError):
    """A lab could not be built: the one line says which command failed and why."""


def ip(*args: str) -> str:
    """Run ``ip ARGS`` and return its output; a failure raises LabError with ip's own message."""
    return run(["ip", *args])


def run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


@dataclass
class Host:
    """One namespace, its address, and its port (the veth end on the switch's side)."""

    name: str
    namespace: str
    address: str
    port: str


@dataclass
class Lab:
    """A switch and its hosts; ``remove`` takes everything it made away again."""

    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}-{secrets.token_hex(2)}")
    hosts: dict[str, Host] = field(default_factory=dict)
    processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = field(default_factory=list)
    relays: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)

    @property
    def switch(self) -> str:
        return f"{self.tag}-switch"

    def build(self, names: list[str]) -> Lab:
        """Make the switch and one host per name (addresses .1, .2, ... in that order)."""
        _LABS.append(self)
        self._namespace(self.switch)
        ip("-n", self.switch, "link", "add", "name", "br0", "type", "bridge")
        ip("-n", self.switch, "link", "set", "dev", "br0", "up")
        for number, name in enumerate(names, start=1):
            self.add_host(name, f"{SUBNET}.{number}")
        return self

    def add_host(self, name: str, address: str) -> Host:
        namespace = f"{self.tag}-{name}"
        self._namespace(namespace)
        port = f"p-{name}"
        ip("-n", self.switch, "link", "add", "name", port, "type", "veth",
           "peer", "name", "eth0", "netns", namespace)  # fmt: skip
        ip("-n", self.switch, "link", "set", "dev", port, "master", "br0", "up")
        ip("-n", namespace, "link", "set", "dev", "lo", "up")
        ip("-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", namespace, "link", "set", "dev", "eth0", "up")
        self.hosts[name] = Host(name, namespace, address, port)
        return self.hosts[name]

    def _namespace(self, namespace: str) -> None:
        ip("netns", "add", namespace)
        self.made.append(namespace)

    def folder(self, name: str) -> Path:
        """A folder every user can enter (the store's PostgreSQL runs as ``postgres``), removed
        with the lab."""
        made = Path(tempfile.mkdtemp(prefix=f"{self.tag}-{name}-"))
        made.chmod(0o755)
        self.folders.append(made)
        return made

    def cut(self, name: str) -> None:
        """Pull the host's cable at the switch: its frames are dropped, both ways, silently."""
        ip("-n", self.switch, "link", "set", "dev", self.hosts[name].port, "down")

    def restore(self, name: str) -> None:
        ip("-n", self.switch, "link", "set", "dev", self.hosts[name].port, "up")

    def link_is_up(self, name: str) -> bool:
        shown = ip("-n", self.switch, "link", "show", "dev", self.hosts[name].port)
        return "UP" in shown.split("<", 1)[1].split(">", 1)[0].split(",")

    def quick_cutter(self) -> QuickCutter:
        """A cutter that pulls a cable within a millisecond: to cut a host mid-statement."""
        return QuickCutter(self)

    def impair(self, name: str, delay_ms: float, loss: float) -> None:
        """Delay every frame to and from the host by ``delay_ms`` and drop ``loss`` of them, each
        way: the host's port leaves the bridge for a relay (``impair.py``) that sends on to a
        new veth pair whose other end takes its place on the bridge."""
        port = self.hosts[name].port
        ip("-n", self.switch, "link", "add", "name", f"{port}-r", "type", "veth",
           "peer", "name", f"{port}-b")  # fmt: skip
        ip("-n", self.switch, "link", "set", "dev", port, "nomaster")
        for end in (port, f"{port}-r"):
            ip("-n", self.switch, "link", "set", "dev", end, "promisc", "on", "up")
        ip("-n", self.switch, "link", "set", "dev", f"{port}-b", "master", "br0", "up")
        argv = [sys.executable, str(_IMPAIR), port, f"{port}-r",
                "--delay-ms", str(delay_ms), "--loss", str(loss)]  # fmt: skip
        self.relays[name] = subprocess.Popen(
            ["ip", "netns", "exec", self.switch, *argv], start_new_session=True
        )

    def clear_impairment(self, name: str) -> None:
        relay = self.relays.pop(name, None)
        if relay is None:
            return
        _end(relay)
        port = self.hosts[name].port
        ip("-n", self.switch, "link", "del", "dev", f"{port}-r")  # its peer goes with it
        ip("-n", self.switch, "link", "set", "dev", port, "promisc", "off", "master", "br0", "up")

    def start(self, host: str, argv: list[str], env: dict[str, str], log: Path) -> Popen:
        """Start ``argv`` in ``host``'s namespace, in a session of its own, output to ``log``."""
        out = log.open("ab")
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.hosts[host].namespace, *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append((process, out))
        return process

    def stop(self, process: Popen) -> None:
        """SIGTERM to the process's group, SIGKILL after 15 s."""
        _end(process)
        for started, out in self.processes:
            if started is process:
                out.close()
        self.processes = [(p, out) for p, out in self.processes if p is not process]

    def remove(self) -> None:
        """Stop every process started here, kill what is left in the namespaces, delete them."""
        for name in list(self.relays):
            with contextlib.suppress(LabError):
                self.clear_impairment(name)
        for process, _ in reversed(self.processes):
            self.stop(process)
        remove_namespaces(self.made)
        self.made.clear()
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)
        self.folders.clear()
        if self in _LABS:
            _LABS.remove(self)


Popen = subprocess.Popen[bytes]


class QuickCutter:
    """``cut``, without starting a process: one ``ip -batch`` on the switch reads each order
    as it is written (starting ``ip`` takes milliseconds, longer than a lock is held)."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.batch = subprocess.Popen(
            ["ip", "-n", lab.switch, "-batch", "-"], stdin=subprocess.PIPE, text=True
        )

    def cut(self, name: str) -> None:
        assert self.batch.stdin is not None
        self.batch.stdin.write(f"link set dev {self.lab.hosts[name].port} down\n")
        self.batch.stdin.flush()

    def close(self) -> None:
        if self.batch.stdin is not None:
            self.batch.stdin.close()
        self.batch.wait(10)


def _end(process: Popen, grace_seconds: float = 15) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def remove_namespaces(namespaces: list[str]) -> None:
    """Kill every process still inside ``namespaces`` (by pid), then delete them."""
    for namespace in namespaces:
        for pid in _pids_in(namespace):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for namespace in namespaces:
        deadline = time.monotonic() + 10
        while _pids_in(namespace) and time.monotonic() < deadline:
            time.sleep(0.05)
        with contextlib.suppress(LabError):
            ip("netns", "del", namespace)


def _pids_in(namespace: str) -> list[int]:
    try:
        return [int(pid) for pid in ip("netns", "pids", namespace).split()]
    except LabError:
        return []  # already gone


def remove_stale() -> list[str]:
    """Delete the namespaces of labs whose owner process is gone; returns their names."""
    pattern = re.compile(rf"^{PREFIX}(\d+)-[0-9a-f]+-\S+")
    stale = []
    for line in ip("netns", "list").splitlines():
        match = pattern.match(line)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            stale.append(line.split()[0])
    remove_namespaces(stale)
    return stale


def remove_all() -> None:
    """Remove every lab of this process (at exit, and on SIGTERM)."""
    for lab in list(_LABS):
        lab.remove()


def _on_sigterm(signum: int, _frame: FrameType | None) -> None:
    remove_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def cannot_make_namespaces() -> str | None:
    """Why this machine cannot host a lab, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    probe = f"{PREFIX}{os.getpid()}-probe-{secrets.token_hex(2)}"
    try:
        ip("netns", "add", probe)
    except (LabError, FileNotFoundError) as error:
        return f"cannot make a network namespace: {error}"
    ip("netns", "del", probe)
    return None


atexit.register(remove_all)
if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _on_sigterm)
