"""A task instance's log, its dependencies, marking it, and ``clearTaskInstances``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, status
from fastapi.responses import PlainTextResponse, Response

from api.dependencies import Situation, blockers
from api.deps import CanRead, Context, DbSession
from api.log_lines import parse
from api.logs import read_chunk, try_log
from api.models.task_instances import (
    StructuredLogMessage,
    TaskDependencyCollectionResponse,
    TaskDependencyResponse,
    TaskInstancesLogResponse,
)
from api.paging import MapIndexPath, MapIndexQuery, TryNumberPath
from api.structure import dag_view
from state.core import utcnow
from state.engine import get_dag_model
from state.records import TIKey
from state.views import get_pool_use, get_run, get_task_instance, upstream_states

PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}"
router = APIRouter(prefix=PATH, tags=["Task Instance"])


@router.get("/logs/{try_number}", response_model=TaskInstancesLogResponse)
def get_log(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    try_number: TryNumberPath,
    _: CanRead,
    session: DbSession,
    context: Context,
    map_index: MapIndexQuery = -1,
    full_content: bool = False,
    token: str | None = None,
    accept: Annotated[str, Header()] = "application/json",
) -> Response | TaskInstancesLogResponse:
    key = TIKey(dag_id, dag_run_id, task_id, map_index)
    ti = get_task_instance(session, key).ti
    if not 1 <= try_number <= ti.try_number:
        detail = f"{dag_id}/{dag_run_id}/{task_id} has had {ti.try_number} tries, not {try_number}"
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail)
    path = try_log(
        context.settings.logs_folder, (dag_id, dag_run_id, task_id, map_index), try_number
    )
    if not path.is_file():
        where = f" (it ran on {ti.hostname})" if ti.hostname else ""
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no log of try {try_number} here{where}")
    chunk = read_chunk(path, token)
    if "text/plain" in accept:
        return PlainTextResponse("\n".join(chunk.lines) + "\n")
    next_token = None if chunk.next_offset is None else str(chunk.next_offset)
    return TaskInstancesLogResponse(
        content=[
            StructuredLogMessage(
                timestamp=line.timestamp,
                event=line.event,
                level=line.level,
                logger=line.logger,
                source=line.source,
            )
            for line in parse(chunk.lines)
        ],
        continuation_token=next_token,
    )


@router.get("/dependencies")
def get_task_instance_dependencies(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    _: CanRead,
    session: DbSession,
    map_index: MapIndexQuery = -1,
) -> TaskDependencyCollectionResponse:
    """What holds the task instance back: paused DAG, upstream not done, pool full, retry wait."""
    model = get_dag_model(session, dag_id)
    run = get_run(session, dag_id, dag_run_id)
    ti = get_task_instance(session, TIKey(dag_id, dag_run_id, task_id, map_index)).ti
    task = dag_view(model).tasks.get(task_id)
    upstream = list(task.upstream) if task else []
    situation = Situation(
        ti=ti,
        run_state=run.state,
        dag_paused=model.is_paused,
        trigger_rule=task.trigger_rule if task else "all_success",
        upstream=upstream_states(session, dag_id, dag_run_id, upstream),
        pool=get_pool_use(session, ti.pool),
    )
    found = blockers(situation, utcnow())
    return TaskDependencyCollectionResponse(
        dependencies=[TaskDependencyResponse(name=b.name, reason=b.reason) for b in found]
    )


@router.get("/{map_index:int}/dependencies")
def get_task_instance_dependencies_by_map_index(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndexPath,
    _: CanRead,
    session: DbSession,
) -> TaskDependencyCollectionResponse:
    return get_task_instance_dependencies(dag_id, dag_run_id, task_id, _, session, map_index)
