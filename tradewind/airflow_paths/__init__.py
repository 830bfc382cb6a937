"""Airflow's import paths, in Tradewind's processes only: a DAG folder's ``airflow.*`` imports.

A DAG folder written for Airflow imports ``from airflow.sdk import dag``, ``from airflow import
DAG``, ``from airflow.providers.standard.operators.python import PythonOperator``... Tradewind
installs no package named ``airflow`` (pip would see a clash with ``apache-airflow``); instead,
``install()`` puts an import finder in front of ``sys.meta_path`` that builds each ``airflow.*``
module on demand from the tables of ``names.py``, every name in it one of Tradewind's own. Only
Tradewind's DAG loader calls ``install()``, so a real Airflow installed beside it imports as it
always did in its own processes; ``TRADEWIND_AIRFLOW_IMPORTS=airflow`` leaves ``airflow`` to it in
Tradewind's processes too. Provider packages installed beside Tradewind stay importable under
``airflow.providers``: that package's path is theirs.
"""

from __future__ import annotations

from tradewind.airflow_paths.finder import (
    AirflowPathsFinder,
    airflow_installed,
    drop_noted_modules,
    install,
    installed_finder,
)

__all__ = [
    "AirflowPathsFinder",
    "airflow_installed",
    "drop_noted_modules",
    "install",
    "installed_finder",
]
