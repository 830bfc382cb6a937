"""A run's state is written by the transition table's one writer only: no second, ORM-made write.

Setting the mapped run's ``state`` after ``transition_run`` made the session flush an
unconditional ``UPDATE dag_run SET state`` of its own at commit, around the table's checks.
"""

from __future__ import annotations

from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.engine.pools import set_pool
from tests.state.harness import HAND_OVER_DAGS, Home, counting_statements

TI = TaskInstanceState


def run_state_writes(statements: list[str]) -> list[str]:
    return [s for s in statements if s.lstrip().upper().startswith("UPDATE DAG_RUN")]


def test_a_run_started_and_settled_is_written_once_each_time(home: Home) -> None:
    with session_scope(home.url) as session:
        set_pool(session, "solo", 1)
    home.write_dag(HAND_OVER_DAGS)
    assert home.sync().import_errors == {}
    run_pk = home.trigger("chain")

    with counting_statements(home.url) as counter:
        assert len(home.schedule(run_pk)) == 1  # a is queued; the run goes queued -> running
    starts = run_state_writes(counter.statements)
    assert len(starts) == 1 and "state IN" in starts[0]  # the conditional move, alone

    for task_id in ("a", "b", "c"):
        home.end_try(home.ti(run_pk, task_id).id, TI.SUCCESS)
        with counting_statements(home.url) as counter:
            home.schedule(run_pk)
    ends = run_state_writes(counter.statements)
    assert len(ends) == 1 and "state IN" in ends[0]  # running -> success, alone
    assert home.run(run_pk).state == DagRunState.SUCCESS
