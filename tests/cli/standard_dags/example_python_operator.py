"""### Python operators

PythonOperator, PythonVirtualenvOperator and ExternalPythonOperator, templated files, async."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pprint import pprint

import pendulum

from tradewind import DAG
from tradewind.standard.python import PythonOperator
from tradewind.standard.python_venv import ExternalPythonOperator, PythonVirtualenvOperator

log = logging.getLogger(__name__)

PATH_TO_PYTHON_BINARY = sys.executable


with DAG(
    dag_id="example_python_operator",
    schedule=None,
    start_date=pendulum.datetime(2021, 1, 1, tz="UTC"),
    catchup=False,
    tags=["example"],
    doc_md=__doc__,
) as dag:

    def print_context(ds=None, **kwargs):
        """Print the Airflow context and ds variable from the context."""
        pprint(sorted(kwargs))
        print("ds is", ds)
        return "Whatever you return gets printed in the logs"

    run_this = PythonOperator(task_id="print_the_context", python_callable=print_context)

    def log_sql(**kwargs):
        print("Python task decorator query:", str(kwargs["templates_dict"]["query"]))

    log_the_sql = PythonOperator(
        task_id="log_sql_query",
        python_callable=log_sql,
        templates_dict={"query": "sql/sample.sql"},
        templates_exts=[".sql"],
    )

    def my_sleeping_function(random_base):
        """This is a function that will run within the DAG execution"""
        time.sleep(random_base)

    for i in range(3):
        sleeping_task = PythonOperator(
            task_id=f"sleep_for_{i}",
            python_callable=my_sleeping_function,
            op_kwargs={"random_base": i / 10},
        )

        run_this >> log_the_sql >> sleeping_task

    async def my_async_sleeping_function(random_base):
        """This is a function that will run within the DAG execution"""
        await asyncio.sleep(random_base)
        return f"slept {random_base}"

    for i in range(2):
        async_sleeping_task = PythonOperator(
            task_id=f"async_sleep_for_{i}",
            python_callable=my_async_sleeping_function,
            op_kwargs={"random_base": i / 10},
        )

        run_this >> log_the_sql >> async_sleeping_task

    def callable_virtualenv():
        """Runs in a virtual environment made for it."""
        import sys

        print("virtualenv prefix:", sys.prefix)
        print("Finished")

    virtualenv_task = PythonVirtualenvOperator(
        task_id="virtualenv_python",
        python_callable=callable_virtualenv,
        requirements=[],
        system_site_packages=False,
    )

    sleeping_task >> virtualenv_task

    def callable_external_python():
        """Runs with the interpreter given."""
        import sys

        print(f"Running task via {sys.executable}")
        print("Finished")

    external_python_task = ExternalPythonOperator(
        task_id="external_python",
        python_callable=callable_external_python,
        python=PATH_TO_PYTHON_BINARY,
    )

    run_this >> external_python_task >> virtualenv_task
