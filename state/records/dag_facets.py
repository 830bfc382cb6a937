"""What the DAG list filters by, copied out of a DAG's structure when it is stored: its tags (one
``dag_tag`` row each, as Airflow's), its owners (``dag.owners``) and its display name.

A list of 5,000 DAGs filtered by tag or owner reads these columns and their index, never the
structures (a DAG of 5,000 tasks has a structure of megabytes). Owners are kept as ``,a,b,`` so
that one owner is matched with ``LIKE '%,a,%'`` on every dialect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from state.core import DagModel, DagTag, insert_missing

#: The longest tag kept (Airflow's ``dag_tag.name`` is 100 characters).
TAG_LENGTH = 100


def owners_of(structure: Mapping[str, Any]) -> list[str]:
    """The DAG's owners as Airflow lists them: its tasks' ``owner``s, each once, sorted."""
    return sorted({str(task.get("owner", "airflow")) for task in structure["tasks"].values()})


def joined_owners(owners: list[str]) -> str | None:
    return f",{','.join(owners)}," if owners else None


def store_facets(session: Session, dag_id: str, structure: Mapping[str, Any]) -> None:
    """Write ``dag_id``'s tags, owners and display name as ``structure`` says them."""
    values = {
        "display_name": structure.get("display_name"),
        "owners": joined_owners(owners_of(structure)),
    }
    session.execute(update(DagModel).where(DagModel.dag_id == dag_id).values(**values))
    tags = sorted({str(name)[:TAG_LENGTH] for name in structure.get("tags", ())})
    session.execute(delete(DagTag).where(DagTag.dag_id == dag_id, DagTag.name.not_in(tags)))
    if tags:
        rows = [{"dag_id": dag_id, "name": name} for name in tags]
        insert_missing(session, DagTag, rows, ["dag_id", "name"])
