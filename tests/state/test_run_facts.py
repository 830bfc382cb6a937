"""``run_facts``: what a try's context reads of other rows on demand, on a SQLite store."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import Asset, AssetEvent, DagAssetReference, DagRun, TaskInstance
from state.records import run_facts
from tests.state.harness import Home

DAY = dt.timedelta(days=1)
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def add_run(session, run_id: str, day: int, state: str, run_type: str = "scheduled") -> DagRun:
    logical = START + day * DAY
    run = DagRun(
        dag_id="d",
        run_id=run_id,
        state=state,
        run_type=run_type,
        logical_date=logical,
        data_interval_start=logical,
        data_interval_end=logical + DAY,
        created_at=logical + DAY,
        start_date=logical + DAY + dt.timedelta(minutes=1),
        end_date=logical + DAY + dt.timedelta(minutes=2),
    )
    session.add(run)
    return run


def test_the_previous_success_is_the_latest_earlier_successful_run(home: Home) -> None:
    with session_scope(home.url) as session:
        add_run(session, "r0", 0, "success")
        add_run(session, "r1", 1, "success")
        add_run(session, "r2", 2, "failed")
        add_run(session, "r3", 3, "running")
        add_run(session, "r4", 4, "success")  # later: not a previous run
        session.add(TaskInstance(dag_id="d", run_id="r3", task_id="t"))

    with session_scope(home.url) as session:
        facts = run_facts(session, "d", "r3", "t")
        first = run_facts(session, "d", "r0", "t")

    assert facts["prev_success"] == {
        "start_date": "2024-01-03T00:01:00+00:00",
        "end_date": "2024-01-03T00:02:00+00:00",
        "data_interval_start": "2024-01-02T00:00:00+00:00",
        "data_interval_end": "2024-01-03T00:00:00+00:00",
    }
    assert first["prev_success"] is None
    assert facts["expanded_ti_count"] is None  # not mapped
    assert facts["triggering_asset_events"] == []  # not an asset run


def test_expanded_ti_count_counts_the_map_indexes_of_the_task(home: Home) -> None:
    with session_scope(home.url) as session:
        add_run(session, "r1", 1, "running")
        for index in range(3):
            session.add(TaskInstance(dag_id="d", run_id="r1", task_id="m", map_index=index))

    with session_scope(home.url) as session:
        assert run_facts(session, "d", "r1", "m")["expanded_ti_count"] == 3


def test_triggering_events_are_those_since_the_previous_asset_run(home: Home) -> None:
    with session_scope(home.url) as session:
        session.add_all([Asset(uri="s3://b/k", name="k"), Asset(uri="s3://b/other", name="o")])
        session.add(DagAssetReference(dag_id="d", reference="asset:s3://b/k"))
        session.flush()
        asset_id = session.scalars(select(Asset.id).filter_by(uri="s3://b/k")).one()
        other_id = session.scalars(select(Asset.id).filter_by(uri="s3://b/other")).one()
        for hour, (asset, extra) in enumerate(
            [(asset_id, {"n": 1}), (asset_id, {"n": 2}), (other_id, {"n": 9}), (asset_id, {"n": 3})]
        ):
            at = START + dt.timedelta(hours=hour)
            session.add(AssetEvent(asset_id=asset, extra=extra, timestamp=at, source_dag_id="up"))
        asset_run = dict(run_type="asset_triggered", state="success", dag_id="d")
        session.add(DagRun(run_id="a1", created_at=START + dt.timedelta(minutes=30), **asset_run))
        session.add(DagRun(run_id="a2", created_at=START + dt.timedelta(hours=4), **asset_run))

    with session_scope(home.url) as session:
        first = run_facts(session, "d", "a1", "t")["triggering_asset_events"]
        second = run_facts(session, "d", "a2", "t")["triggering_asset_events"]

    assert [(e["uri"], e["extra"]) for e in first] == [("s3://b/k", {"n": 1})]
    assert [(e["uri"], e["extra"], e["name"]) for e in second] == [
        ("s3://b/k", {"n": 2}, "k"),
        ("s3://b/k", {"n": 3}, "k"),
    ]
    assert second[0]["source_dag_id"] == "up"
