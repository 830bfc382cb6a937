"""``dags show`` with what Airflow DAGs add: a description, task groups, edge labels."""

from __future__ import annotations

from collections.abc import Callable

from typer.testing import Result

from .conftest import CliEnv

Cli = Callable[..., Result]

GROUPED = """
from tradewind import DAG, Label, TaskGroup, task


@task(task_display_name="Start here")
def start():
    pass


@task
def work():
    pass


with DAG("grouped", description="Groups and labels", dag_display_name="Grouped DAG"):
    first = start()
    with TaskGroup("section") as section:
        with TaskGroup("inner"):
            work()
    first >> Label("when ready") >> section
"""


def test_dags_show_prints_the_description_labels_and_display_names(cli: Cli, env: CliEnv) -> None:
    (env.dags / "grouped.py").write_text(GROUPED)

    shown = cli("dags", "show", "grouped")

    assert shown.exit_code == 0, shown.output
    assert "grouped (Grouped DAG) (2 tasks)" in shown.output
    assert "Groups and labels" in shown.output
    assert "start (Start here)" in shown.output
    assert "[when ready] section.inner.work" in shown.output


def test_dags_show_dot_draws_groups_as_nested_clusters_and_labels_edges(
    cli: Cli, env: CliEnv
) -> None:
    (env.dags / "grouped.py").write_text(GROUPED)

    dot = cli("dags", "show", "grouped", "--format", "dot").output

    assert 'subgraph "cluster_section" {' in dot
    assert '    subgraph "cluster_section.inner" {' in dot
    assert '"start" -> "section.inner.work" [label="when ready"];' in dot
