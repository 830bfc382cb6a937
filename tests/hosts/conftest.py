"""Fixtures of the host scenarios: one lab per session, a fresh fleet on it per test.

The lab (``netlab.py``) is a store host running its own PostgreSQL and Redis, two scheduler
hosts and two worker hosts. Each test gets an empty database and an empty Redis, starts the
processes it needs, and leaves every link up and unimpaired. Where namespaces cannot be made
(not root, no iproute2) every test here is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from labfleet import HostsFleet
from labstore import Store, have_servers, start_store
from netlab import Lab, LabError, cannot_make_namespaces, remove_stale

HOSTS = ["store", "s1", "s2", "w1", "w2"]


@pytest.fixture(scope="session")
def lab() -> Iterator[tuple[Lab, Store]]:
    reason = cannot_make_namespaces() or have_servers()
    if reason is not None:
        pytest.skip(reason)
    remove_stale()
    made = Lab()
    try:
        made.build(HOSTS)
        store = start_store(made, "store")
    except LabError as error:
        made.remove()
        pytest.skip(f"the lab could not be built: {error}")
    except BaseException:
        made.remove()
        raise
    try:
        yield made, store
    finally:
        made.remove()


@pytest.fixture
def hosts(lab: tuple[Lab, Store], tmp_path: Path) -> Iterator[HostsFleet]:
    with fresh_fleet(lab, tmp_path) as fleet:
        yield fleet


@pytest.fixture(scope="module")
def module_hosts(
    lab: tuple[Lab, Store], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostsFleet]:
    """A fleet for a module whose tests all look at one scenario, played once."""
    with fresh_fleet(lab, tmp_path_factory.mktemp("fleet")) as fleet:
        yield fleet


@contextlib.contextmanager
def fresh_fleet(lab: tuple[Lab, Store], folder: Path) -> Iterator[HostsFleet]:
    """An empty database and Redis; afterwards every link is up and unimpaired again."""
    made, store = lab
    store.reset_database()
    store.flush_redis()
    fleet = HostsFleet(made, store, folder)
    try:
        yield fleet
    finally:
        fleet.close()
        for name in made.hosts:
            made.restore(name)
            made.clear_impairment(name)
