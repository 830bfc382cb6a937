"""The yardstick's own example DAGs, one or more per provider, none needing the internet.

Each DAG imports only from ``airflow.*`` (as written for Airflow) and is skipped, not failed,
when its provider is not installed: the yardstick counts what loads and what runs.
"""

import importlib.util

import pendulum
from airflow.sdk import DAG, task

START = pendulum.datetime(2024, 1, 1, tz="UTC")


def have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


if have("airflow.providers.common.sql"):
    from airflow.providers.common.sql.operators.sql import (
        SQLColumnCheckOperator,
        SQLExecuteQueryOperator,
        SQLValueCheckOperator,
    )

    with DAG("example_common_sql", start_date=START, schedule=None):
        make = SQLExecuteQueryOperator(
            task_id="make",
            conn_id="lite",
            sql=["DROP TABLE IF EXISTS fruit", "CREATE TABLE fruit (name TEXT, n INT)"],
        )
        fill = SQLExecuteQueryOperator(
            task_id="fill", conn_id="lite", sql="INSERT INTO fruit VALUES ('apple', 3), ('pear', 5)"
        )
        value = SQLValueCheckOperator(
            task_id="value", conn_id="lite", sql="SELECT sum(n) FROM fruit", pass_value=8
        )
        columns = SQLColumnCheckOperator(
            task_id="columns",
            conn_id="lite",
            table="fruit",
            column_mapping={"n": {"min": {"geq_to": 0}, "null_check": {"equal_to": 0}}},
        )
        make >> fill >> [value, columns]

if have("airflow.providers.sqlite"):
    from airflow.providers.sqlite.hooks.sqlite import SqliteHook

    with DAG("example_sqlite", start_date=START, schedule=None):

        @task
        def hook_rows():
            hook = SqliteHook(sqlite_conn_id="lite")
            hook.run("CREATE TABLE IF NOT EXISTS basket (x INT)")
            hook.insert_rows("basket", [(1,), (2,), (3,)])
            return hook.get_first("SELECT count(*) FROM basket")[0]

        hook_rows()

if have("airflow.providers.common.io"):
    from airflow.providers.common.io.operators.file_transfer import FileTransferOperator

    with DAG("example_common_io", start_date=START, schedule=None):

        @task
        def write(path: str) -> str:
            with open(path, "w") as f:
                f.write("three apples")
            return path

        source = write("/tmp/tw-bench-io-source.txt")
        copy = FileTransferOperator(
            task_id="copy",
            src="file:///tmp/tw-bench-io-source.txt",
            dst="file:///tmp/tw-bench-io-copy.txt",
            overwrite=True,
        )
        source >> copy

if have("airflow.providers.common.compat"):
    from airflow.providers.common.compat.sdk import BaseOperator, Variable

    class Shout(BaseOperator):
        template_fields = ("word",)

        def __init__(self, word: str, **kwargs):
            super().__init__(**kwargs)
            self.word = word

        def execute(self, context):
            self.log.info("shouting %s", self.word)
            return self.word.upper() + Variable.get("suffix", default="!")

    with DAG("example_common_compat", start_date=START, schedule=None):
        Shout(task_id="shout", word="{{ dag.dag_id }}")

if have("airflow.providers.standard"):
    from airflow.providers.standard.operators.python import PythonOperator

    with DAG("example_standard", start_date=START, schedule=None):
        PythonOperator(task_id="add", python_callable=lambda: 40 + 2)
