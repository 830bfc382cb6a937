"""A scheduler host's link cut: the other scheduler keeps every run moving.

Runs are going when scheduler host ``s1`` is cut; more are triggered while it stays cut. Each run's
tasks fail their first try, so only a scheduler can move them on (``up_for_retry`` ->
``scheduled`` -> queued), and only a scheduler starts a new run: the runs ending at all is
``s2``'s work. When ``s1`` comes back, it queues nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from labfleet import HostsFleet, overlaps, starts_per_try, wait_for

pytestmark = pytest.mark.integration
DAG = "hosts_retry"


@pytest.mark.timeout(240)
def test_the_other_scheduler_keeps_every_run_moving(hosts: HostsFleet) -> None:
    for host in ("w1", "w2"):
        hosts.start_worker(host, concurrency=2)
    hosts.start_scheduler("s1")
    hosts.start_scheduler("s2")
    hosts.wait_workers_ready("w1", "w2")
    baseline = _trigger(hosts, "both", 2)
    hosts.wait_runs(DAG, baseline)
    with_both = _retry_gaps(hosts.records())
    during = _trigger(hosts, "during", 2)
    wait_for(lambda: len(hosts.records()) > len(with_both) * 3, "the next first tries to run")
    hosts.lab.cut("s1")
    cut_at = time.time()
    after = _trigger(hosts, "after", 4)

    states = hosts.wait_runs(DAG, baseline + during + after, timeout=120)
    ended_at = time.time()
    hosts.lab.restore("s1")

    assert set(states.values()) == {"success"}
    records = hosts.records()
    assert sorted(starts_per_try(records).values()) == [1] * 2 * 4 * 8  # two tries each
    starts_after = [r["t"] for r in records if r["phase"] == "start" and "/after-" in r["ti"]]
    assert len(starts_after) == 2 * 4 * 4 and min(starts_after) > cut_at
    assert max(r["t"] for r in records) < ended_at  # everything ran while s1 was cut
    with_one = {ti: gap for ti, gap in _retry_gaps(records).items() if ti not in with_both}
    # Printed, not asserted (no timed assertions): a retry waits a loop or two of a scheduler.
    both, one = max(with_both.values()), max(with_one.values())
    print(f"slowest retry gap: {both:.2f}s with two schedulers, {one:.2f}s with one")
    time.sleep(3)  # s1 back: a few loops of it, over runs already ended
    assert starts_per_try(hosts.records()) == starts_per_try(records)
    assert overlaps(hosts.records()) == []
    assert hosts.started["s1"].poll() is None  # s1 survived its outage


def _trigger(hosts: HostsFleet, name: str, count: int) -> list[str]:
    run_ids = [f"{name}-{n}" for n in range(count)]
    for run_id in run_ids:
        hosts.trigger(DAG, run_id)
    return run_ids


def _retry_gaps(records: list[dict[str, Any]]) -> dict[str, float]:
    """Per task instance, from its first try's end to its second try's start, in seconds."""
    ends = {r["ti"]: r["t"] for r in records if r["phase"] == "end" and r["try"] == 1}
    starts = {r["ti"]: r["t"] for r in records if r["phase"] == "start" and r["try"] == 2}
    return {ti: starts[ti] - ends[ti] for ti in starts}


#: Held by a pass that queues (the DAG's row, ``state/engine/pools.py``), until it commits.
_DAG_LOCK_HOLDERS = """
SELECT host(a.client_addr) FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid JOIN pg_class c ON c.oid = l.relation
WHERE l.granted AND c.relname = 'dag' AND l.mode = 'RowShareLock' AND a.client_addr IS NOT NULL
"""


@pytest.fixture
def idle_in_transaction_timeout(hosts: HostsFleet) -> Iterator[None]:
    """The store ends a session idle in a transaction after 3 s (docs/operations.md)."""
    with hosts.store.admin() as admin:
        admin.execute("ALTER SYSTEM SET idle_in_transaction_session_timeout = '3s'")
        admin.execute("SELECT pg_reload_conf()")
    yield
    with hosts.store.admin() as admin:
        admin.execute("ALTER SYSTEM RESET idle_in_transaction_session_timeout")
        admin.execute("SELECT pg_reload_conf()")


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("idle_in_transaction_timeout")
def test_a_scheduler_cut_mid_pass_holds_nothing_for_long(hosts: HostsFleet) -> None:
    """A pass holds the DAG's row locked; a scheduler cut then leaves its session idle in its
    transaction on the store, locks and all, for as long as the link is down. The store's
    idle_in_transaction_session_timeout ends it, and the other scheduler carries on."""
    hosts.settings["TRADEWIND_SCHEDULER_INTERVAL_SECONDS"] = "0.2"
    for host in ("w1", "w2"):
        hosts.start_worker(host, concurrency=2)
    hosts.wait_workers_ready("w1", "w2")
    for host in ("s1", "s2"):
        hosts.start_scheduler(host)
    by_address = {hosts.lab.hosts[h].address: h for h in ("s1", "s2")}
    cutter = hosts.lab.quick_cutter()
    hosts.trigger("hosts_wide", "wide")
    try:
        cut = _cut_a_scheduler_holding_the_dag(hosts, cutter, by_address)
    finally:
        cutter.close()

    assert hosts.wait_runs("hosts_wide", ["wide"], timeout=180) == {"wide": "success"}
    assert not hosts.lab.link_is_up(cut)  # the run ended while the lock holder stayed cut
    log = (hosts.store.folder / "postgres.log").read_text()
    assert "terminating connection due to idle-in-transaction timeout" in log
    assert set(starts_per_try(hosts.records()).values()) == {1}


def _cut_a_scheduler_holding_the_dag(
    hosts: HostsFleet, cutter: Any, by_address: dict[str, str]
) -> str:
    with psycopg.connect(hosts.store.observer_database_url, autocommit=True) as spy:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            holders = [
                by_address[r[0]] for r in spy.execute(_DAG_LOCK_HOLDERS) if r[0] in by_address
            ]
            if holders:
                cutter.cut(holders[0])
                return holders[0]
    raise AssertionError("no scheduler was seen holding the DAG's lock in 60 s")
