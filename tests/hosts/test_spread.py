"""Work spreads over worker hosts: one run's independent tasks run on both, each try once."""

from __future__ import annotations

import pytest
from labfleet import HostsFleet, overlaps, starts_per_try


@pytest.mark.integration
def test_a_run_spreads_over_two_worker_hosts(hosts: HostsFleet) -> None:
    hosts.start_worker("w1")
    hosts.start_worker("w2")
    hosts.start_scheduler("s1")
    hosts.wait_workers_ready("w1", "w2")
    hosts.trigger("hosts_fan", "spread")

    assert hosts.wait_runs("hosts_fan", ["spread"]) == {"spread": "success"}
    records = hosts.records()
    ran_on = {row["host"] for row in records}
    assert ran_on == {"w1", "w2"}
    assert set(starts_per_try(records).values()) == {1}
    assert len(starts_per_try(records)) == 12
    assert overlaps(records) == []
