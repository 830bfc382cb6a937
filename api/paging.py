"""The ``limit``/``offset``/``order_by`` query parameters of every list route, as Airflow's."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Query, status
from pydantic import Field

from state.core import MAX_PAGE_LIMIT, Page
from state.views import NO_SPAN, RunFilter, Span, TIFilter


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


def _span(gte: Any, lte: Any) -> Span:
    return Span(gte, lte) if gte is not None or lte is not None else NO_SPAN


Seconds = Annotated[float | None, Query(ge=0, le=10**9)]


def run_dates(
    start_date_gte: dt.datetime | None = None,
    start_date_lte: dt.datetime | None = None,
    end_date_gte: dt.datetime | None = None,
    end_date_lte: dt.datetime | None = None,
    run_after_gte: dt.datetime | None = None,
    run_after_lte: dt.datetime | None = None,
    logical_date_gte: dt.datetime | None = None,
    logical_date_lte: dt.datetime | None = None,
    duration_gte: Seconds = None,
    duration_lte: Seconds = None,
) -> RunFilter:
    """The date and duration ranges of Airflow's run list (``_gte``/``_lte``, seconds)."""
    return RunFilter(
        logical_date_gte=aware(logical_date_gte),
        logical_date_lte=aware(logical_date_lte),
        start_date=_span(aware(start_date_gte), aware(start_date_lte)),
        end_date=_span(aware(end_date_gte), aware(end_date_lte)),
        run_after=_span(aware(run_after_gte), aware(run_after_lte)),
        duration=_span(duration_gte, duration_lte),
    )


def ti_dates(
    start_date_gte: dt.datetime | None = None,
    start_date_lte: dt.datetime | None = None,
    end_date_gte: dt.datetime | None = None,
    end_date_lte: dt.datetime | None = None,
    duration_gte: Seconds = None,
    duration_lte: Seconds = None,
) -> TIFilter:
    """The date and duration ranges of Airflow's task-instance list."""
    return TIFilter(
        start_date=_span(aware(start_date_gte), aware(start_date_lte)),
        end_date=_span(aware(end_date_gte), aware(end_date_lte)),
        duration=_span(duration_gte, duration_lte),
    )


def aware(value: dt.datetime | None) -> dt.datetime | None:
    """The date in UTC; one without a zone is taken as UTC (as Airflow's API reads one)."""
    if value is None:
        return None
    try:
        return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
    except OverflowError:  # 0001-01-01 east of UTC: before the first UTC date there is
        detail = f"{value.isoformat()} is out of range in UTC"
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail) from None


RunDates = Annotated[RunFilter, Depends(run_dates)]
TIDates = Annotated[TIFilter, Depends(ti_dates)]
