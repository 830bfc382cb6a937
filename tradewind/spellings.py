"""Airflow 2 spellings Tradewind accepts beyond Airflow 3, each named once per DAG file.

Airflow 3 refuses the Airflow 2 names most public DAG folders still use (``schedule_interval``,
``DummyOperator``, ``Dataset``, ``execution_date``...). Tradewind takes them, and says which
Airflow 3 spelling to use: ``airflow2_spelling`` warns with ``Airflow2Spelling``; the loader
(``tradewind/loader.py``) gathers those warnings into one line per file, and ``tradewind dags
check`` lists them. Outside a DAG file's import (in a task process) the warning is ignored.
"""

from __future__ import annotations

import warnings


class Airflow2Spelling(UserWarning):
    """An Airflow 2 name a DAG file used; the message names the Airflow 3 one."""


def airflow2_spelling(old: str, new: str) -> None:
    """Note that the DAG file being loaded said ``old`` where Airflow 3 says ``new``."""
    warnings.warn(f"{old} (Airflow 3: {new})", Airflow2Spelling, stacklevel=3)
