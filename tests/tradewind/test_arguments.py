"""DAG and task arguments Airflow accepts: kept in the structure, or refused in one line."""

from __future__ import annotations

import datetime as dt

import pytest

import tradewind
from tradewind import DAG, DagDefinitionError, dag, task


@task
def noop() -> None:
    pass


def test_dag_arguments_reach_the_structure() -> None:
    with DAG(
        "documented",
        description="One line",
        doc_md="# Title",
        dag_display_name="Shown",
        tags=["a"],
        render_template_as_native_obj=True,
    ) as built:
        noop()

    structure = built.structure()
    assert structure["description"] == "One line"
    assert structure["doc_md"] == "# Title"
    assert structure["display_name"] == "Shown"
    assert built.render_template_as_native_obj is True


def test_the_dag_functions_docstring_is_its_doc_md() -> None:
    @dag
    def explained() -> None:
        """What this DAG does."""
        noop()

    assert explained().structure()["doc_md"] == "What this DAG does."


def test_task_arguments_reach_the_structure() -> None:
    @task(
        owner="data",
        task_display_name="Nice name",
        retry_exponential_backoff=True,
        max_retry_delay=dt.timedelta(minutes=2),
        doc_md="doc",
        depends_on_past=False,
        pool_slots=1,
        priority_weight=1,
    )
    def documented() -> None:
        pass

    with DAG("args") as built:
        documented()
    spec = built.structure()["tasks"]["documented"]
    assert spec["owner"] == "data"
    assert spec["display_name"] == "Nice name"
    assert spec["retry_exponential_backoff"] == 2.0
    assert spec["max_retry_delay_seconds"] == 120.0
    assert spec["doc_md"] == "doc"


def test_default_args_fill_what_the_task_does_not_set() -> None:
    with DAG("defaults", default_args={"retries": 3, "owner": "team"}) as built:
        noop()
        noop.override(retries=0)()

    assert built.get_task("noop").options.retries == 3
    assert built.get_task("noop").options.owner == "team"
    assert built.get_task("noop__1").options.retries == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"sla": dt.timedelta(hours=1)},
            "argument 'sla' is not supported (Airflow 3 removed SLAs)",
        ),
        ({"depends_on_past": "yes"}, "depends_on_past must be True or False"),
        ({"pool_slots": 0}, "pool_slots must be an integer >= 1, got 0"),
        ({"priority_weight": 1.5}, "priority_weight must be an integer, got 1.5"),
        ({"weight_rule": "sideways"}, "weight_rule 'sideways' is not one of"),
        ({"max_active_tis_per_dag": 0}, "max_active_tis_per_dag must be None or an integer >= 1"),
        ({"email_on_failure": "yes"}, "email_on_failure must be True or False, got 'yes'"),
        ({"retry_exponential_backoff": 0.5}, "retry_exponential_backoff must be"),
    ],
)
def test_a_task_argument_not_supported_is_refused_naming_it(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(DagDefinitionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        task(**arguments)(lambda: None)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"sla_miss_callback": print}, "argument 'sla_miss_callback' is not supported"),
        ({"schedule_interval": "@daily", "schedule": "@daily"}, "both schedule_interval and"),
        ({"dagrun_timeout": 3600}, "DAG refused: dagrun_timeout must be a positive timedelta"),
        ({"default_args": {"sla": 1}}, "default_args: argument 'sla' is not supported"),
        ({"end_date": "the first of May"}, "DAG refused: end_date must be a datetime"),
        ({"fail_fast": "yes"}, "DAG refused: fail_fast must be True or False"),
        ({"is_paused_upon_creation": 1}, "is_paused_upon_creation must be True, False or None"),
    ],
)
def test_a_dag_argument_not_supported_is_refused_naming_it(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(DagDefinitionError, match=message):
        DAG("refused", **arguments)  # type: ignore[arg-type]


def test_an_airflow_name_tradewind_lacks_fails_the_import_naming_the_feature() -> None:
    with pytest.raises(ImportError, match=r"StartOfDecadeMapper is not supported.*partitioned"):
        tradewind.StartOfDecadeMapper  # noqa: B018
    with pytest.raises(AttributeError):
        tradewind.no_such_name  # noqa: B018


def test_execution_time_context_gives_never_expire() -> None:
    from tradewind.execution_time.context import NEVER_EXPIRE

    assert NEVER_EXPIRE is tradewind.NEVER_EXPIRE


@pytest.mark.parametrize("kind", ["kubernetes", "docker"])
def test_an_airflow_task_kind_tradewind_lacks_fails_the_import_naming_it(kind: str) -> None:
    decorator = getattr(task, kind)

    with pytest.raises(DagDefinitionError, match=rf"@task.{kind} is not supported by Tradewind"):
        decorator(lambda: None)
