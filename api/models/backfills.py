"""Backfills, as Airflow's ``BackfillResponse``, and the body that creates one (or dry-runs it).

Tradewind creates runs only for intervals that have none (Airflow's ``reprocess_behavior``
``none``), oldest first, on the DAG's latest version: the other values of those fields are
refused with a 400, never ignored.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from state.engine import BackfillRequest, BackfillView


class BackfillPostBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dag_id: str = Field(min_length=1, max_length=250)
    from_date: AwareDatetime
    to_date: AwareDatetime
    run_backwards: bool = False
    dag_run_conf: dict[str, Any] | None = None
    reprocess_behavior: Literal["failed", "completed", "none"] = "none"
    max_active_runs: int = Field(default=10, ge=1, le=2**31 - 1)
    run_on_latest_version: bool | None = None

    def unsupported(self) -> str | None:
        """Why Tradewind cannot do this backfill as asked, or None."""
        if self.run_backwards:
            return "run_backwards is not supported by Tradewind: backfill runs start oldest first"
        if self.reprocess_behavior != "none":
            return (
                f"reprocess_behavior {self.reprocess_behavior!r} is not supported by Tradewind: "
                "only 'none' (intervals that have a run are left as they are)"
            )
        if self.run_on_latest_version is False:
            return "run_on_latest_version false is not supported: runs use the DAG's latest version"
        return None

    def request(self) -> BackfillRequest:
        return BackfillRequest(
            self.dag_id, self.from_date, self.to_date, self.dag_run_conf or {}, self.max_active_runs
        )


class BackfillResponse(BaseModel):
    id: int
    dag_id: str
    from_date: dt.datetime
    to_date: dt.datetime
    dag_run_conf: dict[str, Any] | None
    is_paused: bool
    reprocess_behavior: Literal["failed", "completed", "none"] = "none"
    max_active_runs: int
    created_at: dt.datetime
    completed_at: dt.datetime | None
    updated_at: dt.datetime
    dag_display_name: str


class BackfillCollectionResponse(BaseModel):
    backfills: list[BackfillResponse]
    total_entries: int


class DryRunBackfillResponse(BaseModel):
    logical_date: dt.datetime | None
    partition_key: str | None = None
    partition_date: dt.datetime | None = None


class DryRunBackfillCollectionResponse(BaseModel):
    backfills: list[DryRunBackfillResponse]
    total_entries: int


def backfill_response(view: BackfillView) -> BackfillResponse:
    backfill = view.backfill
    return BackfillResponse(
        id=backfill.id,
        dag_id=backfill.dag_id,
        from_date=backfill.from_date,
        to_date=backfill.to_date,
        dag_run_conf=backfill.dag_run_conf,
        is_paused=backfill.is_paused,
        max_active_runs=backfill.max_active_runs,
        created_at=backfill.created_at,
        completed_at=view.completed_at,
        updated_at=backfill.updated_at,
        dag_display_name=backfill.dag_id,
    )
