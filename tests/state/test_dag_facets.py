"""A DAG's tags, owners and display name in columns of their own (``0021_browse_indexes``):
filled from the structures of a store made before them, and kept as each sync stores a DAG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select, text

from state.core.db import get_engine, session_scope
from state.core.migrate import check_models_match, upgrade
from state.core.models import DagModel, DagTag
from tests.state.harness import tradewind_home

STRUCTURE = {
    "dag_id": "old",
    "tags": ["finance", "daily"],
    "display_name": "Old report",
    "tasks": {"a": {"owner": "ana"}, "b": {"owner": "bo"}, "c": {}},
}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_store_made_before_the_columns_gets_them_from_its_structures(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path}/old.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    )
    upgrade(url, "0014_fernet")
    with get_engine(url).begin() as connection:
        connection.execute(
            text(
                "INSERT INTO dag (dag_id, fileloc, structure, version_hash, is_paused, is_active,"
                " last_parsed_at) VALUES ('old', '/x.py', :structure, 'v1', false, true,"
                " '2026-12-01 00:00:00')"
            ),
            {"structure": json.dumps(STRUCTURE)},
        )
    upgrade(url)
    assert check_models_match(url) == []
    with session_scope(url) as session:
        model = session.get_one(DagModel, "old")
        assert (model.display_name, model.owners) == ("Old report", ",airflow,ana,bo,")
        names = session.scalars(select(DagTag.name).where(DagTag.dag_id == "old"))
        assert sorted(names) == ["daily", "finance"]


DAG_FILE = """
from tradewind import DAG, task


@task(owner="{owner}")
def step() -> None:
    pass


with DAG("kept", tags={tags!r}):
    step()
"""


def test_each_sync_keeps_the_tags_and_owners_of_the_dag_as_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tradewind_home(tmp_path, monkeypatch) as home:
        home.write_dag(DAG_FILE.format(owner="ana", tags=["a", "b"]))
        home.sync()
        home.write_dag(DAG_FILE.format(owner="bo", tags=["b", "c"]))
        home.sync()
        with session_scope(home.url) as session:
            assert session.get_one(DagModel, "kept").owners == ",bo,"
            names = session.scalars(select(DagTag.name).where(DagTag.dag_id == "kept"))
            assert sorted(names) == ["b", "c"]
