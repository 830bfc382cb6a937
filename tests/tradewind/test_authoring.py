"""The authoring API: TaskFlow tasks, dependencies, DAG forms, structure and its hash."""

from __future__ import annotations

import datetime as dt

import pytest

from tradewind import DAG, DagDefinitionError, TriggerRule, dag, task
from tradewind.xcom_arg import RETURN_VALUE, XComArg


@task
def extract() -> list[int]:
    return [1, 2, 3]


@task
def transform(values: list[int]) -> int:
    return sum(values)


@task
def load(total: int) -> None:
    print(total)


@task(multiple_outputs=True)
def split() -> dict[str, int]:
    return {"low": 1, "high": 9}


@task
def noop() -> None:
    pass


def upstream_of(built: DAG, task_id: str) -> set[str]:
    return built.get_task(task_id).upstream_task_ids


# --- TaskFlow: XCom passing, repeated calls, override, multiple outputs -------------------


def test_passing_an_xcom_makes_the_dependency() -> None:
    with DAG("etl") as built:
        load(transform(extract()))

    assert upstream_of(built, "extract") == set()
    assert upstream_of(built, "transform") == {"extract"}
    assert upstream_of(built, "load") == {"transform"}
    assert built.get_task("extract").downstream_task_ids == {"transform"}


def test_an_xcom_nested_in_a_container_argument_makes_the_dependency() -> None:
    with DAG("nested") as built:
        first, second = extract(), extract()
        transform({"a": [first], "b": (second,)})

    assert upstream_of(built, "transform") == {"extract", "extract__1"}


def test_calling_a_task_returns_an_xcomarg_for_its_return_value() -> None:
    with DAG("ret"):
        result = extract()

    assert isinstance(result, XComArg)
    assert result.task.task_id == "extract"
    assert result.key == RETURN_VALUE


def test_calling_one_task_three_times_numbers_the_ids() -> None:
    with DAG("repeat") as built:
        noop()
        noop()
        noop()

    assert list(built.tasks) == ["noop", "noop__1", "noop__2"]


def test_override_changes_options_for_one_use_only() -> None:
    with DAG("override") as built:
        noop()
        noop.override(task_id="special", retries=4)()
        noop()

    assert built.get_task("special").retries == 4
    assert built.get_task("noop").retries == 0
    assert built.get_task("noop__1").retries == 0
    assert noop.options.task_id is None
    assert noop.options.retries == 0


def test_override_task_id_used_twice_is_numbered() -> None:
    with DAG("override_twice") as built:
        noop.override(task_id="x")()
        noop.override(task_id="x")()

    assert set(built.tasks) == {"x", "x__1"}


def test_override_validates_like_task() -> None:
    with pytest.raises(DagDefinitionError, match="retries"):
        noop.override(retries=-1)


def test_multiple_outputs_subscript_gives_an_xcomarg_with_the_key() -> None:
    with DAG("multi") as built:
        parts = split()
        low = parts["low"]
        load(low)

    assert isinstance(low, XComArg)
    assert low.key == "low"
    assert low.task is parts.task
    assert built.get_task("split").multiple_outputs is True
    assert upstream_of(built, "load") == {"split"}


def test_the_function_is_not_run_when_the_dag_is_built() -> None:
    calls: list[int] = []

    @task
    def record() -> None:
        calls.append(1)

    with DAG("lazy"):
        record()

    assert calls == []


def test_wrong_arguments_to_a_task_raise_dag_definition_error() -> None:
    with DAG("bad_args"), pytest.raises(DagDefinitionError, match="transform"):
        transform(1, 2)


# --- Bit-shift dependencies --------------------------------------------------------------


def test_rshift_and_lshift_between_tasks() -> None:
    with DAG("shift") as built:
        a, b, c = noop(), noop(), noop()
        a >> b
        c << b

    assert upstream_of(built, "noop__1") == {"noop"}
    assert upstream_of(built, "noop__2") == {"noop__1"}


def test_rshift_chains_left_to_right() -> None:
    with DAG("chain") as built:
        a, b, c = noop(), noop(), noop()
        a >> b >> c

    assert upstream_of(built, "noop") == set()
    assert upstream_of(built, "noop__1") == {"noop"}
    assert upstream_of(built, "noop__2") == {"noop__1"}


def test_list_on_the_left_of_rshift() -> None:
    with DAG("fan_in") as built:
        a, b, c = noop(), noop(), noop()
        [a, b] >> c

    assert upstream_of(built, "noop__2") == {"noop", "noop__1"}


def test_list_on_the_right_of_rshift() -> None:
    with DAG("fan_out") as built:
        a, b, c = noop(), noop(), noop()
        a >> [b, c]

    assert upstream_of(built, "noop__1") == {"noop"}
    assert upstream_of(built, "noop__2") == {"noop"}


def test_list_on_the_left_of_lshift() -> None:
    with DAG("fan_out_lshift") as built:
        a, b, c = noop(), noop(), noop()
        [a, b] << c

    assert upstream_of(built, "noop") == {"noop__2"}
    assert upstream_of(built, "noop__1") == {"noop__2"}


def test_list_on_the_right_of_lshift() -> None:
    with DAG("fan_in_lshift") as built:
        a, b, c = noop(), noop(), noop()
        c << [a, b]

    assert upstream_of(built, "noop__2") == {"noop", "noop__1"}


def test_shift_works_on_tasks_as_well_as_xcomargs() -> None:
    with DAG("tasks") as built:
        a, b, c = noop().task, noop().task, noop().task
        [a, b] >> c
        [a] << c  # makes a cycle on purpose: only the edges are checked here

    assert upstream_of(built, "noop__2") == {"noop", "noop__1"}
    assert upstream_of(built, "noop") == {"noop__2"}


# --- Options -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry_delay", "seconds"),
    [(30, 30.0), (2.5, 2.5), (0, 0.0), (dt.timedelta(minutes=2), 120.0)],
)
def test_retry_delay_as_seconds_or_timedelta(retry_delay: object, seconds: float) -> None:
    @task(retry_delay=retry_delay)
    def waits() -> None:
        pass

    assert waits.options.retry_delay == dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("retry_delay", [-1, "30", True])
def test_bad_retry_delay_is_refused(retry_delay: object) -> None:
    with pytest.raises(DagDefinitionError, match="retry_delay must be a timedelta or seconds"):
        task(retry_delay=retry_delay)


def test_execution_timeout_as_seconds() -> None:
    @task(execution_timeout=90)
    def bounded() -> None:
        pass

    assert bounded.options.execution_timeout == dt.timedelta(seconds=90)


def test_bad_trigger_rule_names_the_allowed_rules() -> None:
    with pytest.raises(DagDefinitionError) as caught:
        task(trigger_rule="sometimes")

    message = str(caught.value)
    assert "'sometimes'" in message
    for rule in TriggerRule:
        assert rule.value in message


def test_trigger_rule_accepts_the_string_or_the_enum() -> None:
    assert task(trigger_rule="all_done")(noop.function).options.trigger_rule is TriggerRule.ALL_DONE
    assert (
        task(trigger_rule=TriggerRule.ONE_FAILED)(noop.function).options.trigger_rule
        is TriggerRule.ONE_FAILED
    )


@pytest.mark.parametrize("retries", [-1, 1.5, "2"])
def test_bad_retries_is_refused(retries: object) -> None:
    with pytest.raises(DagDefinitionError, match=r"retries must be an integer >= 0, got"):
        task(retries=retries)


def test_unknown_task_option_is_refused() -> None:
    with pytest.raises(DagDefinitionError, match="retires"):
        task(retires=3)


def test_task_called_outside_a_dag_is_refused() -> None:
    with pytest.raises(DagDefinitionError, match=r"task noop called outside a DAG"):
        noop()


def test_runtime_task_needs_a_command_list() -> None:
    with pytest.raises(DagDefinitionError, match="non-empty list"):
        task.runtime(command="./run.sh")
    with pytest.raises(DagDefinitionError, match="non-empty list"):
        task.runtime(command=[])


def test_runtime_task_is_marked_in_the_structure() -> None:
    @task.runtime(command=["./score", "--fast"], queue="go")
    def score(model: str) -> None: ...

    with DAG("runtime") as built:
        score("m1")

    structure = built.structure()["tasks"]["score"]
    assert structure["runtime"] is True
    assert structure["queue"] == "go"


# --- DAG forms ---------------------------------------------------------------------------


def test_dag_decorator_builds_the_dag_with_params_from_defaults() -> None:
    @dag(schedule="@daily", tags=["demo"])
    def report(region: str = "eu", limit: int = 10) -> None:
        load(transform(extract()))

    built = report()

    assert isinstance(built, DAG)
    assert built.dag_id == "report"
    assert built.params == {"region": "eu", "limit": 10}
    assert built.schedule == "@daily"
    assert built.tags == ["demo"]
    assert set(built.tasks) == {"extract", "transform", "load"}


def test_dag_decorator_explicit_params_win_over_defaults() -> None:
    @dag(dag_id="named", params={"region": "us", "extra": True})
    def report(region: str = "eu") -> None:
        noop()

    built = report()

    assert built.dag_id == "named"
    assert built.params == {"region": "us", "extra": True}


def test_dag_decorator_with_a_positional_dag_id_and_bare_form() -> None:
    @dag("positional")
    def first() -> None:
        noop()

    @dag
    def bare() -> None:
        noop()

    assert first().dag_id == "positional"
    assert bare().dag_id == "bare"


def test_with_dag_form() -> None:
    start = dt.datetime(2024, 1, 1)
    with DAG(dag_id="classic", schedule=dt.timedelta(hours=1), start_date=start) as built:
        extract() >> noop()

    assert list(built.tasks) == ["extract", "noop"]
    assert built.start_date == start.replace(tzinfo=dt.UTC)
    assert built.structure()["schedule"] == "interval:3600"
    assert upstream_of(built, "noop") == {"extract"}


def test_empty_dag_id_is_refused() -> None:
    with pytest.raises(DagDefinitionError, match="dag_id"):
        DAG("")


# --- Structure and its hash --------------------------------------------------------------


@task(
    retries=3,
    retry_delay=10,
    execution_timeout=dt.timedelta(minutes=5),
    queue="heavy",
    pool="db",
    trigger_rule="all_done",
)
def cleanup(total: int) -> None:
    pass


@dag(dag_id="shaped")
def shaped() -> None:
    cleanup(transform(extract()))


def test_structure_contents() -> None:
    structure = shaped().structure()

    assert structure["dag_id"] == "shaped"
    assert list(structure["tasks"]) == ["extract", "transform", "cleanup"]
    assert structure["tasks"]["transform"]["downstream"] == ["cleanup"]
    cleanup_spec = structure["tasks"]["cleanup"]
    assert (
        cleanup_spec.items()
        >= {
            "upstream": ["transform"],
            "downstream": [],
            "trigger_rule": "all_done",
            "retries": 3,
            "retry_delay_seconds": 10.0,
            "execution_timeout_seconds": 300.0,
            "queue": "heavy",
            "pool": "db",
            "runtime": False,
            "mapping": None,
            "group": None,
            "label": "cleanup",
            "owner": "airflow",
        }.items()
    )
    default = structure["tasks"]["extract"]
    assert default["upstream"] == []
    assert default["trigger_rule"] == "all_success"
    assert default["retries"] == 0
    assert default["queue"] == "default"
    assert default["pool"] == "default_pool"
    assert default["execution_timeout_seconds"] is None


def test_structure_upstream_lists_are_sorted() -> None:
    with DAG("sorted_upstream") as built:
        c = noop.override(task_id="c")()
        b = noop.override(task_id="b")()
        a = noop.override(task_id="a")()
        [c, a, b] >> noop()

    assert built.structure()["tasks"]["noop"]["upstream"] == ["a", "b", "c"]


def test_version_hash_is_stable_across_two_builds() -> None:
    first, second = shaped(), shaped()

    assert first is not second
    assert first.version_hash() == second.version_hash()
    assert len(first.version_hash()) == 64


def test_version_hash_changes_when_a_task_is_added() -> None:
    @dag(dag_id="shaped")
    def shaped_plus_one() -> None:
        cleanup(transform(extract()))
        noop()

    assert shaped_plus_one().version_hash() != shaped().version_hash()


def test_version_hash_changes_when_an_option_changes() -> None:
    @dag(dag_id="shaped")
    def shaped_more_retries() -> None:
        cleanup.override(retries=5)(transform(extract()))

    assert shaped_more_retries().version_hash() != shaped().version_hash()


# --- Malformed DAGs ----------------------------------------------------------------------


def test_cycle_raises_naming_the_cycle() -> None:
    @dag(dag_id="loop")
    def loop() -> None:
        a = noop.override(task_id="a")()
        b = noop.override(task_id="b")()
        c = noop.override(task_id="c")()
        a >> b >> c >> a

    with pytest.raises(DagDefinitionError, match="DAG loop has a cycle") as caught:
        loop()

    cycle = str(caught.value).split("has a cycle: ")[1].split(" -> ")
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {"a", "b", "c"}
    assert len(cycle) == 4


def test_cycle_in_with_dag_form_raises_on_validate_and_structure() -> None:
    with DAG("self_loop") as built:
        a = noop()
        a >> a

    with pytest.raises(DagDefinitionError, match="noop -> noop"):
        built.validate()
    with pytest.raises(DagDefinitionError, match="cycle"):
        built.structure()


def test_dependency_on_a_task_of_another_dag_by_shift_raises() -> None:
    with DAG("first"):
        theirs = noop()
    with DAG("second"):
        ours = noop()
        with pytest.raises(DagDefinitionError, match="different DAGs"):
            theirs >> ours


def test_dependency_on_a_task_of_another_dag_by_xcom_raises() -> None:
    with DAG("producer"):
        values = extract()
    with DAG("consumer"), pytest.raises(DagDefinitionError, match="different DAGs"):
        transform(values)


def test_a_dependency_on_something_that_is_not_a_task_is_a_clear_error() -> None:
    with DAG("bad_dependency"), pytest.raises(DagDefinitionError, match="cannot depend on 'b'"):
        noop() >> "b"
