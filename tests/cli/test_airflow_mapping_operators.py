"""Classic operators, mapped task groups and second-order mapping, run through ``dags test``."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Callable

import pytest

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

DAGS = """
from tradewind import DAG, BaseOperator, task, task_group


class Greet(BaseOperator):
    template_fields = ("greeting", "query")
    template_ext = (".sql",)

    def __init__(self, greeting, query="", **kwargs):
        super().__init__(**kwargs)
        self.greeting = greeting
        self.query = query

    def execute(self, context):
        print("greeting:", self.greeting)
        print("query:", self.query.strip())
        return [len(self.greeting), 2]


class Scale(BaseOperator):
    def __init__(self, value, factor=1, **kwargs):
        super().__init__(**kwargs)
        self.value = value
        self.factor = factor

    def execute(self, context):
        print("map index", context["ti"].map_index, "scales", self.value)
        return self.value * self.factor


class Total(BaseOperator):
    template_fields = ("values",)

    def __init__(self, values, **kwargs):
        super().__init__(**kwargs)
        self.values = values

    def execute(self, context):
        print("total:", sum(self.values))


@task
def after(values):
    print("after sees", values)


with DAG("operators", params={"who": "world"}):
    greet = Greet(task_id="greet", greeting="hi {{ params.who }}", query="q.sql", retries=1)
    scaled = Scale.partial(task_id="scale", factor=10).expand(value=greet.output)
    Total(task_id="total", values=scaled.output) >> after(scaled.output)
    by_dict = Scale.partial(task_id="by_dict").expand_kwargs(
        [{"value": 1, "factor": 2}, {"value": 3, "factor": 4}]
    )
    after.override(task_id="after_dicts")(by_dict.output)


@task
def numbers():
    return [1, 2, 3]


@task
def add(x, y):
    return x + y


@task
def double(x):
    return x * 2


@task
def collect(values):
    print("collected:", values)


@task_group
def pipeline(x, y):
    return double(add(x, y))


with DAG("mapped_group"):
    collect(pipeline.partial(y=100).expand(x=numbers()))


with DAG("second_order"):
    collect(double.expand(x=double.expand(x=numbers())))


@task
def pairs():
    return [{"x": 1, "y": 2}, {"x": 10, "y": 20}]


with DAG("expand_kwargs"):
    collect.override(task_id="from_xcom")(add.expand_kwargs(pairs()))
    collect.override(task_id="from_literal")(
        add.partial(y=1000).expand_kwargs([{"x": 1}, {"x": 2}])
    )


def label(n):
    return f"item {n}"


@task
def letters():
    return ["a", "b"]


@task
def show(pair):
    return f"{pair[0]}-{pair[1]}"


with DAG("xcom_zip"):
    collect.override(task_id="shortest")(show.expand(pair=numbers().zip(letters())))
    longest = numbers().zip(letters(), fillvalue="z")
    collect.override(task_id="longest")(show.expand(pair=longest))
    collect.override(task_id="plain_zip")(longest.map(len))


with DAG("xcom_map", params={"n": 5}):
    labels = numbers().map(label)
    collect.override(task_id="plain")(labels)
    collect.override(task_id="mapped")(double.expand(x=labels.map(len)))
"""


@pytest.fixture
def mapping_env(env: CliEnv) -> CliEnv:
    (env.dags / "mapping.py").write_text(textwrap.dedent(DAGS))
    (env.dags / "q.sql").write_text("select '{{ params.who }}'\\n")
    return env


def test_operators_render_their_template_fields_map_and_pass_outputs(
    mapping_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "operators", timeout=180)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert "greeting: hi world" in output
    assert "query: select 'world'" in output  # template_ext: the file, rendered
    assert "map index 0 scales 8" in output and "map index 1 scales 2" in output
    assert "total: 100" in output
    assert "after sees [80, 20]" in output
    assert "after sees [2, 12]" in output  # expand_kwargs: each map index's own arguments


def test_a_mapped_group_maps_each_of_its_tasks_item_by_item(
    mapping_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "mapped_group", timeout=180)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert output.count("pipeline.add try 1: success") == 3
    assert output.count("pipeline.double try 1: success") == 3
    assert "collected: [202, 204, 206]" in output


def test_a_mapped_task_maps_over_a_mapped_tasks_results(
    mapping_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "second_order", timeout=180)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "collected: [4, 8, 12]" in done.stdout


def test_tasks_test_runs_one_task_alone(mapping_env: CliEnv, run_cli: RunCli) -> None:
    done = run_cli("tasks", "test", "operators", "greet", timeout=120)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert "greeting: hi world" in output
    assert "scales" not in output  # nothing downstream ran
    listed = run_cli("dags", "test", "operators", "--run-id", "other", timeout=180)
    assert listed.returncode == 0  # the test run left nothing queued behind


def test_tasks_test_of_an_unknown_task_is_one_line(mapping_env: CliEnv, run_cli: RunCli) -> None:
    done = run_cli("tasks", "test", "operators", "nope")

    assert done.returncode != 0
    assert done.stderr.strip() == "error: DAG 'operators' has no task 'nope'"


def test_expand_kwargs_calls_each_map_index_with_its_dict(
    mapping_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "expand_kwargs", timeout=180)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert "collected: [3, 30]" in output
    assert "collected: [1001, 1002]" in output


def test_xcom_map_transforms_each_item_where_it_is_read(
    mapping_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "xcom_map", timeout=180)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert "collected: ['item 1', 'item 2', 'item 3']" in output
    assert "collected: [12, 12, 12]" in output


def test_tasks_test_of_a_mapped_task_is_refused_in_one_line(
    mapping_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("tasks", "test", "operators", "scale")

    assert done.returncode != 0
    assert done.stderr.strip().endswith("tasks test runs unmapped tasks only")


def test_xcom_zip_maps_over_its_parts_side_by_side(mapping_env: CliEnv, run_cli: RunCli) -> None:
    done = run_cli("dags", "test", "xcom_zip", timeout=180)
    output = done.stdout + done.stderr

    assert done.returncode == 0, output
    assert "collected: ['1-a', '2-b']" in output
    assert "collected: ['1-a', '2-b', '3-z']" in output
    assert "collected: [2, 2, 2]" in output
