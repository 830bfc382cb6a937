"""Pools, variables, connections, XComs, state values, import errors, sources and stats.

Secrets never leave the server: a connection's password shows as ``***`` when it is set, and so
do the values of secret variables and the sensitive keys of a connection's ``extra``. A
variable's ``is_encrypted`` says whether the store holds it encrypted (TRADEWIND_FERNET_KEY).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any, ClassVar, Literal

from fastapi import HTTPException, status
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue

from state.core import Connection, DagImportError, TaskStateValue, Variable
from state.views import PoolUse, XComRow, import_error_id
from tradewind.connections import is_sensitive

MASK = "***"


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):  # JSON's true is not a number of slots (pydantic would take 1)
        raise ValueError("slots must be a number, not true or false")
    return value


Slots = Annotated[int, Field(ge=0, le=2**31 - 1), BeforeValidator(_not_a_bool)]


class _Body(BaseModel):
    """A request body: a field it does not name is refused (422), never dropped."""

    model_config = ConfigDict(extra="forbid")

    #: Airflow's fields Tradewind has no concept for, and the one value each may take here.
    unsupported: ClassVar[dict[str, object]] = {}

    def refuse_unsupported(self) -> None:
        """400 naming the first field set to what Tradewind cannot do (teams, deferred slots)."""
        for name, allowed in self.unsupported.items():
            if getattr(self, name) not in (None, allowed):
                detail = f"{name} is not supported by Tradewind: leave it out"
                raise HTTPException(status.HTTP_400_BAD_REQUEST, detail)


class PoolResponse(BaseModel):
    name: str
    slots: int
    description: str | None = None
    include_deferred: bool = False
    occupied_slots: int
    running_slots: int
    queued_slots: int
    scheduled_slots: int
    open_slots: int
    deferred_slots: int = 0
    team_name: str | None = None


class PoolCollectionResponse(BaseModel):
    pools: list[PoolResponse]
    total_entries: int


class PoolBody(_Body):
    unsupported: ClassVar[dict[str, object]] = {"include_deferred": False, "team_name": None}

    name: str = Field(min_length=1, max_length=250)
    slots: Slots
    description: str | None = None
    include_deferred: bool = False
    team_name: str | None = None


class PoolPatchBody(_Body):
    unsupported: ClassVar[dict[str, object]] = {"include_deferred": False, "team_name": None}

    pool: str | None = None
    slots: Slots | None = None
    description: str | None = None
    include_deferred: bool | None = None
    team_name: str | None = None


def pool_response(use: PoolUse) -> PoolResponse:
    return PoolResponse(
        name=use.name,
        slots=use.slots,
        description=use.description,
        occupied_slots=use.occupied,
        running_slots=use.running,
        queued_slots=use.queued,
        scheduled_slots=use.scheduled,
        open_slots=use.open,
    )


class VariableResponse(BaseModel):
    key: str
    value: str | None
    description: str | None = None
    is_encrypted: bool = False
    team_name: str | None = None


class VariableCollectionResponse(BaseModel):
    variables: list[VariableResponse]
    total_entries: int


class VariableBody(_Body):
    unsupported: ClassVar[dict[str, object]] = {"team_name": None}

    key: str = Field(min_length=1, max_length=250)
    value: JsonValue
    description: str | None = None
    team_name: str | None = None

    def text(self) -> str:
        """A variable's value is text; anything else is kept as its JSON."""
        return self.value if isinstance(self.value, str) else json.dumps(self.value)


def variable_response(variable: Variable) -> VariableResponse:
    value = MASK if variable.is_secret or is_sensitive(variable.key) else variable.value
    return VariableResponse(
        key=variable.key,
        value=value,
        description=variable.description,
        is_encrypted=variable.is_encrypted,
    )


class ConnectionResponse(BaseModel):
    connection_id: str
    conn_type: str
    description: str | None = None
    host: str | None
    login: str | None
    schema_: str | None = Field(alias="schema", serialization_alias="schema")
    port: int | None
    password: str | None
    extra: str | None
    team_name: str | None = None

    model_config = ConfigDict(populate_by_name=True)


class ConnectionCollectionResponse(BaseModel):
    connections: list[ConnectionResponse]
    total_entries: int


class ConnectionBody(_Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    unsupported: ClassVar[dict[str, object]] = {"team_name": None}

    connection_id: str = Field(min_length=1, max_length=250, pattern=r"^[\w.-]+$")
    conn_type: str = Field(min_length=1)
    description: str | None = None
    host: str | None = None
    login: str | None = None
    schema_: str | None = Field(default=None, alias="schema")
    port: int | None = Field(default=None, ge=0, le=65535)
    password: str | None = None
    extra: str | None = None
    team_name: str | None = None

    def extra_dict(self) -> dict[str, Any]:
        """``extra`` is a JSON object in text; anything else is a ``ValueError``."""
        if not self.extra:
            return {}
        try:
            extra = json.loads(self.extra)
        except json.JSONDecodeError as error:
            raise ValueError(f"extra is not valid JSON: {error}") from None
        if not isinstance(extra, dict):
            raise ValueError("extra must be a JSON object")
        return extra


def _masked_extra(extra: dict[str, Any]) -> str | None:
    if not extra:
        return None
    masked = {key: MASK if is_sensitive(key) else value for key, value in extra.items()}
    return json.dumps(masked)


def connection_response(connection: Connection) -> ConnectionResponse:
    return ConnectionResponse(
        connection_id=connection.conn_id,
        conn_type=connection.conn_type,
        description=connection.description,
        host=connection.host,
        login=connection.login,
        schema=connection.schema,
        port=connection.port,
        password=MASK if connection.stored_password else None,  # set: no need to decrypt it
        extra=_masked_extra(connection.extra or {}),
    )


class XComResponse(BaseModel):
    key: str
    timestamp: dt.datetime
    logical_date: dt.datetime | None
    map_index: int
    task_id: str
    dag_id: str
    run_id: str
    dag_display_name: str
    task_display_name: str
    run_after: dt.datetime


class XComResponseNative(XComResponse):
    value: Any


class XComResponseString(XComResponse):
    value: str | None


class XComCollectionResponse(BaseModel):
    xcom_entries: list[XComResponse]
    total_entries: int


def _xcom_fields(row: XComRow) -> dict[str, Any]:
    xcom = row.xcom
    return {
        "key": xcom.key,
        "timestamp": xcom.created_at,
        "logical_date": row.logical_date,
        "map_index": xcom.map_index,
        "task_id": xcom.task_id,
        "dag_id": xcom.dag_id,
        "run_id": xcom.run_id,
        "dag_display_name": xcom.dag_id,
        "task_display_name": xcom.task_id,
        "run_after": row.run_after,
    }


def xcom_entry(row: XComRow) -> XComResponse:
    return XComResponse(**_xcom_fields(row))


def xcom_value(row: XComRow, stringify: bool) -> XComResponseNative | XComResponseString:
    """The XCom with its value: the JSON the backend stored (a reference, for object storage)."""
    value = json.loads(row.xcom.value)
    if stringify:
        return XComResponseString(**_xcom_fields(row), value=str(value))
    return XComResponseNative(**_xcom_fields(row), value=value)


class TaskStateStoreResponse(BaseModel):
    key: str
    value: JsonValue
    updated_at: dt.datetime
    expires_at: dt.datetime | None


class TaskStateStoreBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: JsonValue
    # "default": no expiry (the state store's own default retention is to keep the value).
    expires_at: dt.datetime | Literal["default"] | None = "default"

    def expiry(self) -> dt.datetime | None:
        return None if self.expires_at in (None, "default") else self.expires_at  # type: ignore[return-value]


class TaskStateStorePatchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: JsonValue


class TaskStateStoreCollectionResponse(BaseModel):
    task_state_store: list[TaskStateStoreResponse]
    total_entries: int


def state_value_response(row: TaskStateValue) -> TaskStateStoreResponse:
    return TaskStateStoreResponse(
        key=row.key,
        value=json.loads(row.value),
        updated_at=row.updated_at,
        expires_at=row.expires_at,
    )


class ImportErrorResponse(BaseModel):
    import_error_id: int
    timestamp: dt.datetime
    filename: str
    bundle_name: str | None = None
    stack_trace: str


class ImportErrorCollectionResponse(BaseModel):
    import_errors: list[ImportErrorResponse]
    total_entries: int


def import_error_response(error: DagImportError) -> ImportErrorResponse:
    return ImportErrorResponse(
        import_error_id=import_error_id(error.fileloc),
        timestamp=error.timestamp,
        filename=error.fileloc,
        stack_trace=error.traceback or error.error,
    )


class DAGSourceResponse(BaseModel):
    content: str | None
    dag_id: str
    version_number: int | None
    dag_display_name: str


class DagStatsStateResponse(BaseModel):
    state: str
    count: int


class DagStatsResponse(BaseModel):
    dag_id: str
    dag_display_name: str
    stats: list[DagStatsStateResponse]


class DagStatsCollectionResponse(BaseModel):
    dags: list[DagStatsResponse]
    total_entries: int
