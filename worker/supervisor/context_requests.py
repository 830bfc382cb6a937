"""The supervisor's handlers of what a try's context asks of the store on demand: the run's
facts (previous success, expansion, triggering asset events) and a mapped instance's name."""

from __future__ import annotations

from state.core import session_scope
from state.records import run_facts, set_rendered_map_index
from worker import wire as p
from worker.supervisor.request_table import handles
from worker.supervisor.try_context import TryContext


@handles
def get_run_facts(ctx: TryContext, request: p.GetRunFacts) -> p.Message:
    ti = ctx.ti
    with session_scope(ctx.url) as session:
        facts = run_facts(session, ti.dag_id, ti.run_id, ti.task_id)
    return p.RunFactsResult(**facts)


@handles
def set_rendered_name(ctx: TryContext, request: p.SetRenderedMapIndex) -> p.Message:
    with session_scope(ctx.url) as session:
        set_rendered_map_index(session, ctx.fence, request.rendered_map_index)
    return p.OKResponse()
