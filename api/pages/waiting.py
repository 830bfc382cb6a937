"""Why a task instance is not running yet, named for a person: which upstream, which pool.

Built on ``api.dependencies.blockers`` (the REST ``dependencies`` route's answer) with what a
page can say more precisely: the upstream tasks not done by name, and the DAG's
``max_active_tasks`` when it is reached. Costs three statements whatever the run's size.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from api.dependencies import Blocker, Situation, blockers
from api.structure import DagStructure
from state.core import FINISHED, DagModel, DagRun, TaskInstance, TaskInstanceState, utcnow
from state.views import TaskSummary, active_in_dag, get_pool_use, task_summaries

TI = TaskInstanceState


def waiting_reasons(
    session: Session, model: DagModel, run: DagRun, structure: DagStructure, ti: TaskInstance
) -> list[Blocker]:
    """What holds ``ti`` back, in the order it would have to clear (empty: nothing does)."""
    spec = structure.tasks.get(ti.task_id)
    upstream_ids = list(spec.upstream) if spec else []
    upstream = task_summaries(session, ti.dag_id, ti.run_id, upstream_ids) if upstream_ids else {}
    states = [
        TI(state) for s in upstream.values() for state, n in s.counts.items() for _ in range(n)
    ]
    situation = Situation(
        ti=ti,
        run_state=run.state,
        dag_paused=model.is_paused,
        trigger_rule=spec.trigger_rule if spec else "all_success",
        upstream=states,
        pool=get_pool_use(session, ti.pool) if ti.state == TI.SCHEDULED else None,
    )
    found = blockers(situation, utcnow())
    if found and found[0].name == "Task Instance State":
        return []
    if ti.state == TI.NONE:
        found = [_named_upstream(b, upstream) if b.name == "Trigger Rule" else b for b in found]
    active = active_in_dag(session, ti.dag_id) if ti.state == TI.SCHEDULED else 0
    if active >= structure.max_active_tasks > 0:
        reason = (
            f"the DAG has {active} task instance(s) queued or running, "
            f"its max_active_tasks is {structure.max_active_tasks}"
        )
        found.append(Blocker("Max Active Tasks", reason))
    if ti.state == TI.QUEUED:
        found.append(Blocker("Queued", f"waiting for a worker on queue {ti.queue!r}"))
    return found


def _named_upstream(blocker: Blocker, upstream: dict[str, TaskSummary]) -> Blocker:
    pending = [
        f"{task_id} ({_progress(summary)})"
        for task_id, summary in upstream.items()
        if any(n and TI(state) not in FINISHED for state, n in summary.counts.items())
    ]
    if not pending:
        return blocker
    return Blocker("Upstream Not Done", f"waiting for {', '.join(sorted(pending))}")


def _progress(summary: TaskSummary) -> str:
    if not summary.mapped:
        state = TI(summary.state)
        return "not started" if state == TI.NONE else str(state).replace("_", " ")
    done = sum(n for state, n in summary.counts.items() if TI(state) in FINISHED)
    return f"{done:,} of {summary.total:,} done"
