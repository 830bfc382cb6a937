"""A listing costs the same statements whatever the number of rows behind it."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from tests.state.harness import Home, counting_statements

Headers = Callable[[str], dict[str, str]]


def _mapped_run(home: Home, run_id: str, items: int) -> None:
    home.trigger("fan", run_id=run_id)
    with session_scope(home.url) as session:
        session.query(TaskInstance).filter_by(run_id=run_id, task_id="double").delete()
        session.add_all(
            TaskInstance(dag_id="fan", run_id=run_id, task_id="double", map_index=index)
            for index in range(items)
        )
        assert session.query(DagRun).filter_by(run_id=run_id).count() == 1


def _statements(api: TestClient, home: Home, headers: dict[str, str], path: str) -> int:
    with counting_statements(home.url) as counter:
        assert api.get(path, headers=headers).status_code == 200
    return len(counter.statements)


def test_listing_task_instances_does_not_grow_with_the_run(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    _mapped_run(home, "small", 3)
    _mapped_run(home, "large", 600)
    viewer = as_role("viewer")
    base = "/api/v2/dags/fan/dagRuns/{}/taskInstances"
    small = _statements(api, home, viewer, base.format("small") + "?limit=1000")
    large = _statements(api, home, viewer, base.format("large") + "?limit=1000")
    assert small == large <= 6
    few = _statements(api, home, viewer, base.format("small") + "/double/listMapped")
    many = _statements(api, home, viewer, base.format("large") + "/double/listMapped?limit=1000")
    assert few == many


def test_asset_and_backfill_listings_do_not_grow_with_their_rows(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    from state.core.models import utcnow
    from state.records.assets import EventSource, OutletEvent, record_events

    viewer = as_role("viewer")
    paths = ("/api/v2/assets", "/api/v2/assets/events", "/api/v2/assets/aliases")
    source = EventSource("etl", "r1", "load")

    def add_events(count: int) -> None:
        events = [OutletEvent(f"s3://a/{n}", alias=f"al{n % 3}") for n in range(count)]
        with session_scope(home.url) as session:
            record_events(session, source, events, utcnow())

    add_events(2)
    few = [_statements(api, home, viewer, path) for path in paths]
    add_events(40)
    assert [_statements(api, home, viewer, path) for path in paths] == few
    assert max(few) <= 8
