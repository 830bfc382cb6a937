"""One page of a listing: ``limit``/``offset`` and an ``order_by`` over named columns.

Every list the API serves goes through ``page_of``: the page is bounded (``MAX_PAGE_LIMIT``),
the total is counted by the database, and an ordering names only the columns its listing
allows, so a request can neither read a whole table nor sort by an unindexed expression of
its choosing. Orderings follow Airflow's: field names, ``-`` in front for descending.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, Select, func, select
from sqlalchemy.orm import QueryableAttribute, Session

#: A column a listing filters or sorts by: a mapped attribute or a Core column.
Column = ColumnElement[Any] | QueryableAttribute[Any]

#: The most rows one page holds; a larger ``limit`` is cut to it (as Airflow's page limit).
MAX_PAGE_LIMIT = 1000


class NotFound(LookupError):
    """What a list or a look-up was asked for does not exist (a run, a task instance, an XCom, a
    key, an asset, a backfill): the API answers 404, the CLI one line."""


class BadOrdering(ValueError):
    """An ``order_by`` field the listing does not sort by."""


@dataclass(frozen=True)
class Page:
    limit: int = 50
    offset: int = 0
    order_by: tuple[str, ...] = ()

    @property
    def bounded_limit(self) -> int:
        return max(0, min(self.limit, MAX_PAGE_LIMIT))


def ordering(order_by: Sequence[str], columns: Mapping[str, Column]) -> list[ColumnElement[Any]]:
    """The ORDER BY terms of ``order_by``; an unknown field is a ``BadOrdering``."""
    terms: list[ColumnElement[Any]] = []
    for field in order_by:
        name = field.removeprefix("-")
        if name not in columns:
            allowed = ", ".join(sorted(columns))
            raise BadOrdering(f"cannot order by {name!r}: order_by takes {allowed}")
        column = columns[name]
        terms.append(column.desc() if field.startswith("-") else column.asc())
    return terms


def page_of(
    session: Session,
    query: Select[*tuple[Any, ...]],
    page: Page,
    columns: Mapping[str, Column],
    default_order: Sequence[str],
) -> tuple[Sequence[Row[*tuple[Any, ...]]], int]:
    """The rows of ``page`` and how many rows the whole listing has (two statements)."""
    terms = ordering(page.order_by or default_order, columns)
    total = session.scalar(select(func.count()).select_from(query.order_by(None).subquery()))
    rows = session.execute(
        query.order_by(*terms).limit(page.bounded_limit).offset(max(page.offset, 0))
    ).all()
    return rows, int(total or 0)
