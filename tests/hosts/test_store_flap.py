"""The store host's link flapping (down 2 s, up 2 s, five times) while runs go.

Every worker and scheduler loses PostgreSQL and Redis at once, five times, mid-try and
mid-hand-over. Every run must still end, and no try may run its body twice.
"""

from __future__ import annotations

import time

import pytest
from labfleet import HostsFleet, body_spans, overlaps, starts_per_try

pytestmark = pytest.mark.integration
FLAPS, DOWN_SECONDS, UP_SECONDS = 5, 2.0, 2.0


@pytest.mark.timeout(300)
def test_runs_end_through_a_flapping_store_link(hosts: HostsFleet) -> None:
    for host in ("w1", "w2"):
        hosts.start_worker(host, concurrency=2)
    hosts.start_scheduler("s1")
    hosts.wait_workers_ready("w1", "w2")
    runs: dict[str, list[str]] = {"hosts_chain": [], "hosts_fan": []}
    outages: list[tuple[float, float]] = []
    for flap in range(FLAPS):
        for dag_id, run_ids in runs.items():
            run_ids.append(f"flap-{flap}")
            hosts.trigger(dag_id, run_ids[-1], conf={"seconds": 0.2})
        hosts.lab.cut("store")
        cut_at = time.time()
        time.sleep(DOWN_SECONDS)
        hosts.lab.restore("store")
        outages.append((cut_at, time.time()))
        time.sleep(UP_SECONDS)

    for dag_id, run_ids in runs.items():
        states = hosts.wait_runs(dag_id, run_ids, timeout=180)
        assert set(states.values()) == {"success"}, states
    records = hosts.records()
    assert set(starts_per_try(records).values()) == {1}
    spans = body_spans(records).values()
    cut_mid_try = [o for o in outages if any(s < o[0] and e > o[0] for s, e in spans)]
    assert cut_mid_try, "no outage fell while a body ran: the scenario tested nothing"
    tries = {key[1] for key in starts_per_try(records)}
    print(
        f"outages mid-try: {len(cut_mid_try)} of {FLAPS}; tries used: {sorted(tries)}; "
        f"bodies of one task instance overlapping: {len(overlaps(records))}"
    )
