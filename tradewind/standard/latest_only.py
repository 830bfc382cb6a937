"""``LatestOnlyOperator``: the tasks after it run only in the latest scheduled run.

A run triggered by hand (``manual``, or ``test`` as ``dags test`` makes) always goes on, as in
Airflow. A scheduled or backfilled run goes on only while now is within its window: from the
start of its data interval to the end of the next interval, that is before the next scheduled
run is due. Otherwise its direct downstream tasks are skipped (the trigger rules carry it on).
A DAG without a time schedule has no later run to defer to: its runs always go on.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from tradewind.standard.branch import BaseBranchOperator
from tradewind.timetables import timetable_of

#: Run types that are not the scheduler's: nothing later will replace them.
BY_HAND = frozenset({"manual", "test"})


class LatestOnlyOperator(BaseBranchOperator):
    """Skip the direct downstream tasks unless this run is the latest scheduled one."""

    def choose_branch(self, context: dict[str, Any]) -> list[str]:
        downstream = sorted(self.task.downstream_task_ids)
        dag_run = context["dag_run"]
        if dag_run.run_type in BY_HAND:
            print("run triggered by hand: the tasks after go on", flush=True)
            return downstream
        window = self.window(dag_run)
        if window is None:
            print("no later scheduled run: the tasks after go on", flush=True)
            return downstream
        left, right = window
        now = dt.datetime.now(dt.UTC)
        print(f"latest window ({left.isoformat()}, {right.isoformat()}], now {now.isoformat()}")
        if not left < now <= right:
            print("not the latest run: skipping the tasks after", flush=True)
            return []
        return downstream

    def window(self, dag_run: Any) -> tuple[dt.datetime, dt.datetime] | None:
        """The run's window, or None when no scheduled run will follow it."""
        schedule = getattr(self.dag, "_schedule_text", None)
        start = dag_run.data_interval_start or dag_run.logical_date
        end = dag_run.data_interval_end or dag_run.logical_date
        if schedule is None or schedule == "@once" or start is None or end is None:
            return None
        table = timetable_of(schedule, self.dag.start_date or start)
        assert table is not None  # "@once" has none: handled above
        return start, table.after(end)
