"""The ``limit``/``offset``/``order_by`` query parameters of every list route, as Airflow's."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query
from pydantic import Field

from state.core import MAX_PAGE_LIMIT, Page


def page_params(
    limit: Annotated[int, Query(ge=0, description=f"At most {MAX_PAGE_LIMIT}.")] = 50,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    order_by: Annotated[list[str] | None, Query()] = None,
) -> Page:
    # Airflow takes ``order_by=a&order_by=-b``; its older clients send ``order_by=a,-b``.
    fields = [field.strip() for value in order_by or () for field in value.split(",")]
    return Page(limit=limit, offset=offset, order_by=tuple(field for field in fields if field))


Paging = Annotated[Page, Depends(page_params)]


#: The largest integer a store column holds (PostgreSQL's ``integer``): larger ones are refused.
MAX_SQL_INT = 2**31 - 1
_Bounded = Field(ge=-(2**31), le=MAX_SQL_INT)

MapIndexQuery = Annotated[int, Query(ge=-1, le=MAX_SQL_INT)]
OptionalMapIndex = Annotated[int | None, Query(ge=-1, le=MAX_SQL_INT)]
MapIndexPath = Annotated[int, Path(ge=0, le=MAX_SQL_INT)]
TryNumberPath = Annotated[int, Path(ge=1, le=MAX_SQL_INT)]
IntsQuery = Annotated[list[Annotated[int, _Bounded]] | None, Query()]
IdPath = Annotated[int, Path(ge=0, le=MAX_SQL_INT)]
IdQuery = Annotated[int | None, Query(ge=0, le=MAX_SQL_INT)]
