"""Human-in-the-loop tasks under ``tradewind dags test``: each question says where to answer it,
timeouts answer with the defaults (the sweep runs in the command's loop), an approval's
default lets the downstream run, a branch's default picks its task, and ``execution_timeout``
given instead of ``response_timeout`` bounds the wait as in Airflow."""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Callable

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import TaskInstance, XCom
from tradewind.settings import get_settings

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]
pytestmark = pytest.mark.timeout(240)

DAG = """
import datetime

from airflow.providers.standard.operators.hitl import (
    ApprovalOperator, HITLBranchOperator, HITLEntryOperator, HITLOperator,
)
from airflow.sdk import DAG, Param, task

SECOND = datetime.timedelta(seconds=1)

with DAG("asks", schedule=None):
    pick = HITLOperator(task_id="pick", subject="Pick one", options=["a", "b"], defaults=["b"],
                        execution_timeout=SECOND)
    entry = HITLEntryOperator(task_id="entry", subject="Fill", response_timeout=SECOND,
                              params={"x": Param(3, type="integer")})
    approve = ApprovalOperator(task_id="approve", subject="ok?", defaults="Approve",
                               response_timeout=SECOND)
    branch = HITLBranchOperator(task_id="branch", subject="which", options=["one", "two"],
                                options_mapping={"two": "t2"}, defaults=["two"],
                                response_timeout=SECOND)

    @task
    def t1(): ...

    @task
    def t2(): ...

    [pick, entry] >> approve >> branch >> [t1(), t2()]
"""


def test_dags_test_runs_a_hitl_dag_whose_defaults_answer(run_cli: RunCli, env: CliEnv) -> None:
    (env.dags / "asks.py").write_text(textwrap.dedent(DAG))
    tested = run_cli("dags", "test", "asks", "--run-id", "r1", timeout=200)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    out = " ".join(tested.stdout.split())  # the console wraps long lines
    assert "pick waits for an answer to 'Pick one' (options a, b): answer it at" in out
    assert "/dags/asks/runs/r1/tasks/pick" in out and "/pick/-1/hitlDetails" in out
    with session_scope(get_settings().sql_url) as session:
        states = dict(
            session.execute(
                select(TaskInstance.task_id, TaskInstance.state).filter_by(run_id="r1")
            ).all()
        )
        values = {
            task_id: json.loads(value)
            for task_id, value in session.execute(select(XCom.task_id, XCom.value))
        }
    assert states == {
        "pick": "success",
        "entry": "success",
        "approve": "success",
        "branch": "success",
        "t1": "skipped",
        "t2": "success",
    }
    assert values["pick"]["chosen_options"] == ["b"] and values["pick"]["responded_by_user"] is None
    assert values["entry"] == {
        **values["entry"],
        "chosen_options": ["OK"],
        "params_input": {"x": 3},
    }
    assert values["branch"] == ["t2"]
