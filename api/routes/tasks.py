"""``/api/v2/dags/{dag_id}/tasks``: a DAG's tasks, from its parsed structure."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CanRead, DbSession
from api.models.dags import TaskCollectionResponse, TaskResponse, task_response
from api.structure import dag_view
from state.core import BadOrdering, NotFound
from state.engine import get_dag_model

router = APIRouter(prefix="/dags/{dag_id}/tasks", tags=["Task"])

_ORDER = ("task_id", "trigger_rule", "retries", "queue", "pool")


@router.get("")
def get_tasks(
    dag_id: str, _: CanRead, session: DbSession, order_by: str = "task_id"
) -> TaskCollectionResponse:
    view = dag_view(get_dag_model(session, dag_id))
    field = order_by.removeprefix("-")
    if field not in _ORDER:
        raise BadOrdering(f"cannot order by {field!r}: order_by takes {', '.join(_ORDER)}")
    tasks = [task_response(task_id, task) for task_id, task in view.tasks.items()]
    tasks.sort(key=lambda task: str(getattr(task, field)), reverse=order_by.startswith("-"))
    return TaskCollectionResponse(tasks=tasks, total_entries=len(tasks))


@router.get("/{task_id}")
def get_task(dag_id: str, task_id: str, _: CanRead, session: DbSession) -> TaskResponse:
    view = dag_view(get_dag_model(session, dag_id))
    if task_id not in view.tasks:
        raise NotFound(f"DAG {dag_id!r} has no task {task_id!r}")
    return task_response(task_id, view.tasks[task_id])
