"""``sync_dags`` stores the structure the loader computed: each DAG's is built once a sync."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.dag_sync import sync_dags
from state.core.models import DagModel
from tradewind.dag import DAG

FILE = """
from tradewind import DAG, task

@task
def step() -> None:
    pass

for name in ("a", "b", "c"):
    with DAG(name):
        step() >> step()
"""


def test_each_structure_is_built_once_and_stored_with_its_hash(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dags.py").write_text(textwrap.dedent(FILE))
    built: list[str] = []
    real = DAG.structure

    def counting(self: DAG, order: list[str] | None = None) -> dict[str, Any]:
        built.append(self.dag_id)
        return real(self, order)

    monkeypatch.setattr(DAG, "structure", counting)
    result = sync_dags(session, tmp_path)
    session.commit()

    assert sorted(built) == ["a", "b", "c"]
    assert sorted(result.changed) == ["a", "b", "c"]
    for model in session.scalars(select(DagModel)):
        dag = result.dags[model.dag_id]
        assert model.structure == real(dag)
        assert model.version_hash == dag.version_hash()
