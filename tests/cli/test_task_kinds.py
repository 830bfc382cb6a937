"""The task kinds of Airflow 3 through ``dags test`` in a real process (fork, supervisor, SQL
store): ``@task.bash`` and ``BashOperator``, ``@task.sensor`` in both modes, ``@task.virtualenv``.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import tempfile
from collections.abc import Callable

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.enums import TaskInstanceState as TI
from state.core.models import TaskInstance
from state.core.transitions import transition_tis
from tradewind.settings import get_settings

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

KINDS_DAG = """
from tradewind import DAG, BaseSensorOperator, BashOperator, PokeReturnValue, task


@task.bash(env={"GREETING": "hi"}, append_env=True)
def say(word):
    return "echo first line; echo \\"$GREETING {{ params.who }} " + word + "\\"; pwd"


@task.bash(cwd="/tmp")
def where():
    return "pwd"


@task
def show(value):
    print("bash xcom:", value)


@task.bash
def skipped():
    return "exit 99"


@task.bash
def broken():
    return "echo to stderr >&2; exit 3"


with DAG("bash_kinds", params={"who": "there"}):
    show(say("again"))
    where()
    BashOperator(task_id="classic", bash_command="echo classic {{ run_id[:4] }}")

with DAG("bash_skip"):
    skipped()

with DAG("bash_fail"):
    broken()


@task.sensor(poke_interval=0.1, timeout=60)
def poked(task_state_store=None, ti=None):
    pokes = (task_state_store.get("pokes") or 0) + 1
    task_state_store.set("pokes", pokes)
    print(f"poke {pokes} in try {ti.try_number}")
    return PokeReturnValue(is_done=pokes >= 3, xcom_value=f"ready after {pokes}")


@task.sensor(poke_interval=0.2, timeout=60, mode="reschedule")
def rescheduled(task_state_store=None, ti=None):
    pokes = (task_state_store.get("pokes") or 0) + 1
    task_state_store.set("pokes", pokes)
    print(f"poke {pokes} in try {ti.try_number}")
    return PokeReturnValue(is_done=pokes >= 3, xcom_value=f"ready after {pokes}")


@task.sensor(poke_interval=0.2, timeout=0.5)
def never():
    return False


@task.sensor(poke_interval=0.2, timeout=0.5, mode="reschedule", soft_fail=True)
def never_soft():
    return False


with DAG("sensor_poke"):
    show(poked())

with DAG("sensor_reschedule"):
    show(rescheduled())

with DAG("sensor_timeout"):
    never()

with DAG("sensor_soft_fail"):
    never_soft()


class CountingSensor(BaseSensorOperator):
    template_fields = ("label",)

    def __init__(self, *, label, needed=3, **kwargs):
        super().__init__(**kwargs)
        self.label = label
        self.needed = needed

    def poke(self, context):
        store = context["task_state_store"]
        pokes = (store.get("pokes") or 0) + 1
        store.set("pokes", pokes)
        print(f"{self.label} poke {pokes} in try {context['ti'].try_number} ({self.mode})")
        if self.needed is None:
            return False
        return PokeReturnValue(is_done=pokes >= self.needed, xcom_value=f"ready after {pokes}")


with DAG("classic_sensor_poke"):
    show(CountingSensor(task_id="counted", label="{{ dag.dag_id }}", poke_interval=0.1).output)

with DAG("classic_sensor_reschedule"):
    show(
        CountingSensor(
            task_id="counted", label="resched", poke_interval=0.2, mode="reschedule"
        ).output
    )

with DAG("classic_sensor_timeout"):
    CountingSensor(task_id="stuck", label="stuck", needed=None, poke_interval=0.2, timeout=0.5)

with DAG("classic_sensor_soft_fail"):
    CountingSensor(
        task_id="stuck_soft", label="soft", needed=None, poke_interval=0.2, timeout=0.5,
        mode="reschedule", soft_fail=True,
    )
"""

VENV_DAG = """
from tradewind import DAG, task


@task.virtualenv(requirements=["six"], system_site_packages=False)
def in_venv(x, y=2, **context):
    import sys

    import six

    print("prefix:", sys.prefix)
    return {"sum": x + y, "six": six.__name__, "context": sorted(context)}


@task.virtualenv(requirements=[])
def fails():
    raise ValueError("bad in venv")


@task
def show(value):
    print("venv result:", value)


with DAG("venv_kinds"):
    show(in_venv(40))

with DAG("venv_fail"):
    fails()
"""


@pytest.fixture
def kinds_env(env: CliEnv) -> CliEnv:
    (env.dags / "kinds.py").write_text(KINDS_DAG)
    (env.dags / "venv.py").write_text(VENV_DAG)
    return env


def output_of(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


def test_a_bash_task_runs_its_rendered_command_and_its_last_line_is_the_xcom(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "bash_kinds", timeout=120)
    output = output_of(done)

    assert done.returncode == 0, output
    assert "stdout: first line" in output  # every line goes to the log
    assert "stdout: hi there again" in output  # env, append_env and a template
    # The last line (pwd) is the XCom: without cwd, a fresh temporary folder, as in Airflow.
    assert f"bash xcom: {tempfile.gettempdir()}/tradewind" in output
    assert "where result: /tmp" in output  # cwd
    assert "classic result: classic test" in output  # BashOperator's template field


def test_a_bash_exit_99_skips_and_another_exit_code_fails_in_one_line(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    skipped = run_cli("dags", "test", "bash_skip", timeout=120)
    failed = run_cli("dags", "test", "bash_fail", timeout=120)

    assert skipped.returncode == 0, output_of(skipped)
    assert "skipped try 1: skipped" in output_of(skipped)
    assert failed.returncode == 1
    assert "stderr: to stderr" in output_of(failed)
    assert (
        "broken try 1: failed  BashCommandFailed: task broken: bash command failed with exit code 3"
        in output_of(failed)
    )


def test_a_poke_sensor_pokes_in_one_try_until_done_and_pushes_its_value(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "sensor_poke", timeout=120)
    output = output_of(done)

    assert done.returncode == 0, output
    assert "poke 3 in try 1" in output
    assert "up_for_reschedule" not in output
    assert "bash xcom: ready after 3" in output


def test_a_reschedule_sensor_ends_its_try_between_pokes_and_pokes_again_in_the_same_try(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "sensor_reschedule", timeout=120)
    output = output_of(done)

    assert done.returncode == 0, output
    assert "try 1 ended up_for_reschedule" in output
    assert "poke 3 in try 1" in output
    assert output.count("poke 1 in try 1") == 1  # each poke's lines shown once
    assert "try 2" not in output
    assert "bash xcom: ready after 3" in output


def test_a_sensor_past_its_timeout_fails_in_one_line_or_skips_with_soft_fail(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    failed = run_cli("dags", "test", "sensor_timeout", timeout=120)
    soft = run_cli("dags", "test", "sensor_soft_fail", timeout=120)

    assert failed.returncode == 1
    assert "never try 1: failed  SensorTimeout: sensor never timed out: not done after" in (
        output_of(failed)
    )
    assert soft.returncode == 0, output_of(soft)
    assert "never_soft try 1: skipped  sensor never_soft timed out" in output_of(soft)


def test_a_classic_sensor_pokes_in_one_try_or_between_reschedules_and_pushes_its_value(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    poked = run_cli("dags", "test", "classic_sensor_poke", timeout=120)
    rescheduled = run_cli("dags", "test", "classic_sensor_reschedule", timeout=120)

    assert poked.returncode == 0, output_of(poked)
    assert "classic_sensor_poke poke 3 in try 1 (poke)" in output_of(poked)  # a template field
    assert "up_for_reschedule" not in output_of(poked)
    assert "bash xcom: ready after 3" in output_of(poked)
    assert rescheduled.returncode == 0, output_of(rescheduled)
    assert "try 1 ended up_for_reschedule" in output_of(rescheduled)
    assert "resched poke 3 in try 1 (reschedule)" in output_of(rescheduled)
    assert "try 2" not in output_of(rescheduled)
    assert "bash xcom: ready after 3" in output_of(rescheduled)


def test_a_classic_sensor_past_its_timeout_fails_in_one_line_or_skips_with_soft_fail(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    failed = run_cli("dags", "test", "classic_sensor_timeout", timeout=120)
    soft = run_cli("dags", "test", "classic_sensor_soft_fail", timeout=120)

    assert failed.returncode == 1
    assert "stuck try 1: failed  SensorTimeout: sensor stuck timed out: not done after" in (
        output_of(failed)
    )
    assert soft.returncode == 0, output_of(soft)
    assert "stuck_soft try 1: skipped  sensor stuck_soft timed out" in output_of(soft)


def test_a_virtualenv_task_runs_in_a_venv_made_once_per_requirements(
    kinds_env: CliEnv, run_cli: RunCli
) -> None:
    first = run_cli("dags", "test", "venv_kinds", timeout=300)
    second = run_cli("dags", "test", "venv_kinds", timeout=300)
    failed = run_cli("dags", "test", "venv_fail", timeout=300)

    assert first.returncode == 0, output_of(first)
    assert "making virtualenv" in output_of(first)
    assert "venv result: {'sum': 42, 'six': 'six', 'context': []}" in output_of(first)
    assert "prefix: " + str(kinds_env.home / "venvs") in output_of(first)
    assert second.returncode == 0, output_of(second)
    assert "making virtualenv" not in output_of(second)  # reused
    assert failed.returncode == 1
    assert "VirtualenvError: task fails: failed in its virtualenv: ValueError: bad in venv" in (
        output_of(failed)
    )


def test_runs_show_says_when_a_rescheduled_sensor_pokes_next(cli, env: CliEnv) -> None:
    assert cli("db", "migrate").exit_code == 0
    assert cli("dags", "trigger", "pair", "--run-id", "r1").exit_code == 0
    next_poke = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    with session_scope(get_settings().sql_url) as session:
        first = session.scalars(select(TaskInstance).filter_by(task_id="first")).one()
        for to_state in (TI.SCHEDULED, TI.QUEUED, TI.RUNNING):
            transition_tis(session, [first.id], [first.state], to_state)
            session.refresh(first)
        values = {"next_retry_at": next_poke}
        transition_tis(session, [first.id], [TI.RUNNING], TI.UP_FOR_RESCHEDULE, values)

    shown = cli("runs", "show", "pair", "r1", "--json")
    table = cli("runs", "show", "pair", "r1")

    row = json.loads(shown.stdout)["task_instances"][0]
    assert (row["state"], row["next_try_at"]) == ("up_for_reschedule", "2030-01-02T03:04:05+00:00")
    assert "up_for_reschedule" in table.stdout and "2030-01-02 03:04:05 UTC" in table.stdout
