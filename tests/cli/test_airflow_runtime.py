"""What a task sees at run time, as in Airflow: the context keys, ``**kwargs``, XCom push and
pull, Jinja templates, retry policies and the retry and skip callbacks; each DAG runs with
``dags test`` in a real process (fork, supervisor, SQL store).
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from collections.abc import Callable

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import TaskInstance
from tradewind.settings import get_settings

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

RUNTIME_DAG = """
from pathlib import Path

from tradewind import DAG, Param, task


@task
def context_keys(**kwargs):
    wanted = ["ti", "dag_run", "run_id", "params", "logical_date", "ds", "ds_nodash", "ts",
              "data_interval_start", "data_interval_end", "task", "dag", "conn", "var",
              "task_state_store"]
    print("missing keys:", [key for key in wanted if key not in kwargs])
    print("conf:", kwargs["dag_run"].conf, "params:", kwargs["params"])
    print("ds matches:", kwargs["ds"] == kwargs["logical_date"].strftime("%Y-%m-%d"))
    print("var:", kwargs["var"].value.get("colour"))
    kwargs["ti"].xcom_push("extra", {"n": 7})
    return "first"


@task
def mapped(x):
    return x * 10


@task
def puller(ti=None):
    print("pulled key:", ti.xcom_pull(task_ids="context_keys", key="extra"))
    print("pulled index:", ti.xcom_pull(task_ids="mapped", map_indexes=1))
    print("pulled indexes:", ti.xcom_pull(task_ids="mapped", map_indexes=[0, 2]))
    print("pulled all:", ti.xcom_pull(task_ids="mapped"))
    print("pulled list:", ti.xcom_pull(task_ids=["context_keys", "mapped"]))
    print("pulled missing:", ti.xcom_pull(task_ids="context_keys", key="nope", default="dflt"))


@task(templates_dict={"greeting": "{{ params.greeting }} in {{ var.value.colour }}"})
def templated(text, pulled, upstream, templates_dict=None):
    print("text:", text)
    print("pulled:", pulled)
    print("upstream:", upstream)
    print("dict:", templates_dict)


with DAG("airflow_runtime", params={"greeting": Param("hello", type="string")}):
    first = context_keys()
    [first, mapped.expand(x=[1, 2, 3])] >> puller()
    templated(
        "run {{ run_id }} on {{ ds_nodash }}",
        "{{ ti.xcom_pull(task_ids='context_keys', key='extra')['n'] }}",
        first,
    )


@task
def native(value):
    print("native:", type(value).__name__, value)


with DAG("native_templates", render_template_as_native_obj=True, params={"n": 3}):
    native("{{ [params.n, params.n + 1] }}")


@task
def broken(value):
    print(value)


with DAG("broken_template"):
    broken("{{ oops ")


@task(templates_exts=[".txt"])
def with_macros(text, filed):
    print("macros:", text)
    print("filed:", filed.strip())


with DAG(
    "macros",
    user_defined_macros={"shout": lambda s: s.upper()},
    user_defined_filters={"twice": lambda s: s * 2},
    template_searchpath=[str(Path(__file__).parent.parent / "templates")],
):
    with_macros("{{ shout('hi') }} {{ 'ab' | twice }}", "greeting.txt")
"""

POLICY_DAG = """
import datetime as dt

from tradewind import (
    DAG, AirflowSkipException, ExceptionRetryPolicy, RetryAction, RetryRule, task,
)

FAIL_AT_ONCE = ExceptionRetryPolicy(
    rules=[RetryRule(exception=KeyError, action=RetryAction.FAIL, reason="no such key")]
)
QUICK_RETRY = ExceptionRetryPolicy(
    rules=[RetryRule(exception="builtins.ValueError", retry_delay=dt.timedelta(seconds=0.2))]
)


def say_retry(context):
    print("on_retry_callback ran for try", context["ti"].try_number)


def say_skip(context):
    print("on_skipped_callback ran")


@task(retries=3, retry_delay=0, retry_policy=FAIL_AT_ONCE)
def not_retried():
    raise KeyError("missing")


# Without the policy's own delay this would wait ten minutes before its second try.
@task(retries=1, retry_delay=600, retry_policy=QUICK_RETRY, on_retry_callback=say_retry)
def retried_soon(task_state_store=None):
    if not task_state_store.get("failed_once"):
        task_state_store.set("failed_once", True)
        raise ValueError("first try fails")
    print("second try succeeds")


@task(on_skipped_callback=say_skip)
def skipper():
    raise AirflowSkipException("nothing today")


with DAG("policy_fail"):
    not_retried()

with DAG("policy_retry"):
    retried_soon()

with DAG("skip_callback"):
    skipper()
"""


@pytest.fixture
def runtime_env(env: CliEnv, run_cli: RunCli) -> CliEnv:
    (env.dags / "runtime.py").write_text(textwrap.dedent(RUNTIME_DAG))
    (env.dags / "policy.py").write_text(textwrap.dedent(POLICY_DAG))
    (env.dags.parent / "templates").mkdir()
    (env.dags.parent / "templates" / "greeting.txt").write_text("{{ shout('from a file') }}\n")
    assert run_cli("variables", "set", "colour", "blue").returncode == 0
    return env


def output_of(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


def test_a_task_gets_the_context_xcoms_and_rendered_templates(
    runtime_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "airflow_runtime", "--conf", '{"extra": 1}', timeout=180)
    output = output_of(done)

    assert done.returncode == 0, output
    assert "missing keys: []" in output
    assert "conf: {'extra': 1} params: {'greeting': 'hello', 'extra': 1}" in output
    assert "ds matches: True" in output
    assert "var: blue" in output
    assert "pulled key: {'n': 7}" in output
    assert "pulled index: 20" in output
    assert "pulled indexes: [10, 30]" in output
    assert "pulled all: [10, 20, 30]" in output
    assert "pulled list: ['first', [10, 20, 30]]" in output
    assert "pulled missing: dflt" in output
    assert re.search(r"text: run test__\S+ on \d{8}\n", output)
    assert "pulled: 7" in output
    assert "upstream: first" in output  # a task's result is resolved, not rendered
    assert "dict: {'greeting': 'hello in blue'}" in output


def test_native_templates_give_python_objects(runtime_env: CliEnv, run_cli: RunCli) -> None:
    done = run_cli("dags", "test", "native_templates", timeout=120)

    assert done.returncode == 0, output_of(done)
    assert "native: list [3, 4]" in output_of(done)


def test_a_template_syntax_error_fails_the_task_in_one_line(
    runtime_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "broken_template", timeout=120)

    assert done.returncode == 1
    assert "TemplateError: template syntax error in task broken:" in output_of(done)


def test_a_retry_policy_fails_a_matching_exception_at_once(
    runtime_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "policy_fail", timeout=120)
    output = output_of(done)

    assert done.returncode == 1
    assert "not_retried try 1: failed" in output
    assert "retry policy: fail, no such key" in output
    assert "try 2" not in output


def test_a_retry_policy_retries_after_its_own_delay_and_runs_the_retry_callback(
    runtime_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "policy_retry", timeout=120)
    output = output_of(done)

    assert done.returncode == 0, output
    assert "retried_soon try 1: up_for_retry" in output
    assert "on_retry_callback ran for try 1" in output
    assert "second try succeeds" in output


def test_a_skipped_task_runs_its_skipped_callback(runtime_env: CliEnv, run_cli: RunCli) -> None:
    done = run_cli("dags", "test", "skip_callback", timeout=120)

    assert done.returncode == 0, output_of(done)
    assert "on_skipped_callback ran" in output_of(done)


def test_a_conf_that_breaks_a_param_is_refused_in_one_line(
    runtime_env: CliEnv, run_cli: RunCli
) -> None:
    for command in ("trigger", "test"):
        done = run_cli("dags", command, "airflow_runtime", "-c", '{"greeting": 5}')

        assert done.returncode == 2, output_of(done)
        assert (
            done.stderr.strip()
            .splitlines()[-1]
            .endswith("DAG 'airflow_runtime': param 'greeting': 5 is not of type 'string'")
        )
    with session_scope(get_settings().sql_url) as session:
        assert session.scalars(select(TaskInstance)).first() is None


def test_templates_use_the_dags_macros_filters_and_search_path(
    runtime_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "macros", timeout=120)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert "macros: HI abab" in output
    assert "filed: FROM A FILE" in output
