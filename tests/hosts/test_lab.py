"""The lab itself: hosts reach each other and nothing else, links cut and impaired as asked,
and everything it made is gone after it is removed (stale labs of dead owners too)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import netlab
import pytest
from netlab import PREFIX, Lab, cannot_make_namespaces, ip, remove_stale

pytestmark = pytest.mark.integration

_PROBE = """
import socket, sys, time
started = time.monotonic()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()
except OSError as error:
    print(type(error).__name__, error.errno)
else:
    print("connected", time.monotonic() - started)
"""


@pytest.fixture
def small_lab() -> Iterator[Lab]:
    reason = cannot_make_namespaces()
    if reason is not None:
        pytest.skip(reason)
    made = Lab().build(["a", "b"])
    yield made
    made.remove()


def _listen(lab: Lab, host: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    script = tmp_path / "listen.py"
    script.write_text(
        "import socket, sys, time\n"
        "s = socket.create_server((sys.argv[1], 7000))\n"
        "while True:\n    s.accept()[0].close()\n"
    )
    server = lab.start(host, [sys.executable, str(script), lab.hosts[host].address],
                       dict(os.environ), tmp_path / "listen.log")  # fmt: skip
    time.sleep(0.5)
    return server


def _probe(lab: Lab, host: str, address: str, timeout: float = 2.0) -> str:
    argv = ["ip", "netns", "exec", lab.hosts[host].namespace, sys.executable, "-c", _PROBE,
            address, "7000", str(timeout)]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_hosts_reach_each_other_and_nothing_outside(small_lab: Lab, tmp_path: Path) -> None:
    _listen(small_lab, "b", tmp_path)
    assert _probe(small_lab, "a", small_lab.hosts["b"].address).startswith("connected")
    assert _probe(small_lab, "a", "192.0.2.1") == "OSError 101"  # ENETUNREACH: no route out
    assert ip("-n", small_lab.hosts["a"].namespace, "route").split()[0] == "198.18.0.0/24"


def test_a_cut_link_carries_nothing_until_restored(small_lab: Lab, tmp_path: Path) -> None:
    _listen(small_lab, "b", tmp_path)
    small_lab.cut("b")
    assert _probe(small_lab, "a", small_lab.hosts["b"].address, timeout=1) == "TimeoutError None"
    small_lab.restore("b")
    assert _probe(small_lab, "a", small_lab.hosts["b"].address).startswith("connected")


def test_an_impaired_link_delays_each_way(small_lab: Lab, tmp_path: Path) -> None:
    _listen(small_lab, "b", tmp_path)
    small_lab.impair("a", delay_ms=50, loss=0.0)
    outcome = _probe(small_lab, "a", small_lab.hosts["b"].address).split()
    assert outcome[0] == "connected" and float(outcome[1]) >= 0.1  # SYN and SYN-ACK, 50 ms each
    small_lab.clear_impairment("a")
    assert _probe(small_lab, "a", small_lab.hosts["b"].address).startswith("connected")


def test_removing_a_lab_leaves_nothing(tmp_path: Path) -> None:
    reason = cannot_make_namespaces()
    if reason is not None:
        pytest.skip(reason)
    lab = Lab().build(["a"])
    server = _listen(lab, "a", tmp_path)
    lab.impair("a", delay_ms=1, loss=0.0)
    relay = lab.relays["a"]
    namespaces = list(lab.made)
    lab.remove()
    assert server.poll() is not None and relay.poll() is not None
    listed = ip("netns", "list")
    assert not [ns for ns in namespaces if ns in listed]
    assert not [folder for folder in lab.folders if folder.exists()]


def test_stale_labs_of_dead_owners_are_removed_and_live_ones_kept() -> None:
    reason = cannot_make_namespaces()
    if reason is not None:
        pytest.skip(reason)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    stale, live = f"{PREFIX}{dead}-beef-x", f"{PREFIX}{os.getpid()}-beef-x"
    for namespace in (stale, live):
        ip("netns", "add", namespace)
    try:
        assert stale in remove_stale()
        listed = ip("netns", "list")
        assert stale not in listed and live in listed
    finally:
        for namespace in (stale, live):
            if namespace in ip("netns", "list"):
                ip("netns", "del", namespace)


def test_without_root_the_reason_to_skip_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netlab.os, "geteuid", lambda: 1000)
    assert cannot_make_namespaces() == "network namespaces need root (ip netns add)"


def test_without_iproute2_the_reason_to_skip_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    if os.geteuid() != 0:
        pytest.skip("needs root to get past the first check")
    reason = cannot_make_namespaces()
    assert reason is not None and reason.startswith("cannot make a network namespace:")
