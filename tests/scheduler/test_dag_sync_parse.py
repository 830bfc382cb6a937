"""``sync_dags`` stores the structures its child processes computed, and imports no DAG file in
the scheduler's own process (``tradewind/dag_processor.py``)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.dag_sync import sync_dags
from state.core.models import DagModel
from tradewind.loader import load_parsed_dags

FILE = """
from tradewind import DAG, task

@task
def step() -> None:
    pass

for name in ("a", "b", "c"):
    with DAG(name):
        step() >> step()
"""


def test_each_structure_is_stored_with_its_hash_and_no_file_imported_here(
    session: Session, tmp_path: Path
) -> None:
    path = tmp_path / "dags.py"
    path.write_text(textwrap.dedent(FILE))
    before = set(sys.modules)
    result = sync_dags(session, tmp_path)
    session.commit()

    assert not [name for name in set(sys.modules) - before if name.startswith("tradewind_dags_")]
    assert sorted(result.changed) == ["a", "b", "c"]
    expected = {parsed.dag.dag_id: parsed for parsed in load_parsed_dags(path)}
    for model in session.scalars(select(DagModel)):
        assert model.structure == expected[model.dag_id].structure
        assert model.version_hash == expected[model.dag_id].version_hash
        assert result.dags[model.dag_id].fileloc == str(path.resolve())
