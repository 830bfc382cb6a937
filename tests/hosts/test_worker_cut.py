"""A worker host's link cut mid-try: the try is given up and retried on the other worker host;
when the link returns, the cut host's writes for it are refused and its task process stopped.

Played once per module (``cut_mid_try``); each test checks one promise about what happened.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labfleet import HostsFleet, overlaps, wait_for

pytestmark = pytest.mark.integration
DAG, RUN = "hosts_hold", "cut"


@dataclass
class Played:
    fleet: HostsFleet
    cut_host: str
    other_host: str
    first_pid: int
    cut_at: float
    restored_at: float
    run_state: str


def _first(fleet: HostsFleet, phase: str, try_number: int) -> dict[str, Any] | None:
    rows = (r for r in fleet.records() if r["phase"] == phase and r["try"] == try_number)
    return next(rows, None)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # exited, not reaped yet


@pytest.fixture(scope="module")
def cut_mid_try(module_hosts: HostsFleet) -> Played:
    fleet = module_hosts
    for host in ("w1", "w2"):
        fleet.start_worker(host)
    fleet.start_scheduler("s1")
    fleet.wait_workers_ready("w1", "w2")
    fleet.trigger(DAG, RUN, conf={"first_try_seconds": 90, "seconds": 1})
    wait_for(lambda: _first(fleet, "tick", 1), "the first try's body to run")
    first = _first(fleet, "start", 1)
    assert first is not None
    cut_host = first["host"]
    fleet.lab.cut(cut_host)
    cut_at = time.time()
    (state,) = fleet.wait_runs(DAG, [RUN], timeout=90).values()
    fleet.lab.restore(cut_host)
    return Played(
        fleet, cut_host, {"w1": "w2", "w2": "w1"}[cut_host], first["pid"], cut_at, time.time(),
        state,
    )  # fmt: skip


def test_the_try_is_retried_on_the_other_host(cut_mid_try: Played) -> None:
    assert cut_mid_try.run_state == "success"
    (ti,) = cut_mid_try.fleet.task_instances(DAG, RUN)
    assert (str(ti.state), ti.try_number) == ("success", 2)
    second = _first(cut_mid_try.fleet, "start", 2)
    assert second is not None and second["host"] == cut_mid_try.other_host
    assert second["t"] > cut_mid_try.cut_at


def test_the_cut_hosts_task_is_stopped_and_its_writes_refused(cut_mid_try: Played) -> None:
    played = cut_mid_try
    wait_for(lambda: _gone(played.first_pid), "the cut host's task process to end", timeout=90)
    log = next((played.fleet.folder / played.cut_host / "logs").rglob("1.log")).read_text()
    assert "the try no longer holds its task instance" in log
    ends = [r for r in played.fleet.records() if r["try"] == 1 and r["phase"] == "end"]
    assert ends == []  # stopped, not finished: its body held for 90 s
    (ti,) = played.fleet.task_instances(DAG, RUN)
    assert (str(ti.state), ti.try_number) == ("success", 2)  # nothing the late host wrote won


def test_no_body_ran_twice_at_once(cut_mid_try: Played) -> None:
    wait_for(lambda: _gone(cut_mid_try.first_pid), "the cut host's task process to end", 90)
    assert overlaps(cut_mid_try.fleet.records()) == []
