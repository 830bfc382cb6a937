"""The ``limit``/``offset``/``order_by`` query parameters of every list route, as Airflow's."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from state.paging import MAX_PAGE_LIMIT, Page


def page_params(
    limit: Annotated[int, Query(ge=0, description=f"At most {MAX_PAGE_LIMIT}.")] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
    order_by: Annotated[list[str] | None, Query()] = None,
) -> Page:
    # Airflow takes ``order_by=a&order_by=-b``; its older clients send ``order_by=a,-b``.
    fields = [field.strip() for value in order_by or () for field in value.split(",")]
    return Page(limit=limit, offset=offset, order_by=tuple(field for field in fields if field))


Paging = Annotated[Page, Depends(page_params)]
