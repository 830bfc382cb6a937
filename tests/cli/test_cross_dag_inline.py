"""``dags test`` (and ``tasks test``) of a DAG with the cross-DAG operators: the run a trigger
creates is driven in the same process (no scheduler runs there), so a trigger waiting for it
ends; a rescheduled ``ExternalTaskSensor`` finds it by logical date; ``tasks clear`` of a marker
clears the run it marks."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from tradewind.settings import get_settings

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

DAGS = """
from tradewind import DAG, task
from tradewind.standard.external_task import ExternalTaskMarker, ExternalTaskSensor
from tradewind.standard.trigger_dagrun import TriggerDagRunOperator


@task
def work():
    return "worked"


with DAG("target"):
    work()

with DAG("controller"):
    trigger = TriggerDagRunOperator(
        task_id="trigger",
        trigger_dag_id="target",
        trigger_run_id="{{ run_id }}__target",
        logical_date="{{ logical_date.isoformat() }}",
        wait_for_completion=True,
        poke_interval=0.2,
    )
    wait = ExternalTaskSensor(
        task_id="wait", external_dag_id="target", external_task_id="work",
        mode="reschedule", poke_interval=1, timeout=60,
    )
    trigger >> ExternalTaskMarker(
        task_id="mark", external_dag_id="target", external_task_id="work"
    )
"""


def test_dags_test_drives_the_triggered_run_and_a_marker_clears_it(
    env: CliEnv, run_cli: RunCli
) -> None:
    (Path(env.dags) / "cross.py").write_text(textwrap.dedent(DAGS))
    done = run_cli("dags", "test", "controller", "--run-id", "c1", timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "driving triggered target run c1__target here too" in output
    assert "target c1__target: success" in output
    assert "controller c1: success" in output

    cleared = run_cli("tasks", "clear", "controller", "c1", "--task-id", "mark", "--yes")
    assert cleared.returncode == 0, cleared.stderr
    with session_scope(get_settings().sql_url) as session:
        run = session.scalars(select(DagRun).where(DagRun.run_id == "c1__target")).one()
        work = session.scalars(select(TaskInstance).where(TaskInstance.run_id == run.run_id)).one()
        assert (str(work.state), work.generation, str(run.state)) == ("none", 1, "queued")


def test_tasks_test_of_a_trigger_drives_the_run_it_waits_for(env: CliEnv, run_cli: RunCli) -> None:
    (Path(env.dags) / "cross.py").write_text(textwrap.dedent(DAGS))
    done = run_cli("tasks", "test", "controller", "trigger", timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "supervisor: try 1 ended success" in output
    assert "__target: success" in output  # the triggered run's own outcome
