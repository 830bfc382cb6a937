"""Airflow 2's context keys in a DAG file, named once at load (``tradewind.spellings``).

Tradewind gives a task ``execution_date``, ``next_ds``, ``prev_ds``, ``yesterday_ds``... as
Airflow 2 did (``tradewind/context_keys.py``); a DAG file that uses one is told the Airflow 3
spelling. What is looked at is what costs nothing to look at while a task is made: the parameter
names of its function, and the ``{{ ... }}`` / ``{% ... %}`` blocks of its templated strings.
Template files and ``**context`` reads are not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from types import FunctionType
from typing import Any

from tradewind.spellings import airflow2_spelling

#: Airflow 2's context keys, and the Airflow 3 spelling each names in its warning.
AIRFLOW2_KEYS = {
    "execution_date": "logical_date",
    "next_execution_date": "data_interval_end",
    "prev_execution_date": "prev_data_interval_start_success",
    "next_ds": "{{ data_interval_end | ds }}",
    "next_ds_nodash": "{{ data_interval_end | ds_nodash }}",
    "prev_ds": "{{ prev_data_interval_start_success | ds }}",
    "prev_ds_nodash": "{{ prev_data_interval_start_success | ds_nodash }}",
    "yesterday_ds": "{{ macros.ds_add(ds, -1) }}",
    "yesterday_ds_nodash": "{{ macros.ds_add(ds, -1) }} without dashes",
    "tomorrow_ds": "{{ macros.ds_add(ds, 1) }}",
    "tomorrow_ds_nodash": "{{ macros.ds_add(ds, 1) }} without dashes",
}

_IN_TEMPLATE = re.compile(r"\b(" + "|".join(sorted(AIRFLOW2_KEYS, key=len, reverse=True)) + r")\b")
_BLOCK = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
_MARKS = ("{{", "{%")


def note_airflow2_names(function: Any, templated: Iterable[Any]) -> None:
    """Warn once for each Airflow 2 key ``function`` names as a parameter or a template uses."""
    found = _parameters(function) | _in_templates(templated)
    for name in sorted(found):
        airflow2_spelling(name, AIRFLOW2_KEYS[name])


def _parameters(function: Any) -> set[str]:
    """Read off the code object: no ``inspect.signature`` at load for every task."""
    if type(function) is not FunctionType:
        return set()
    code = function.__code__
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    return {name for name in names if name in AIRFLOW2_KEYS}


def _in_templates(values: Iterable[Any]) -> set[str]:
    found: set[str] = set()
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if any(mark in value for mark in _MARKS):
                for block in _BLOCK.finditer(value):
                    found.update(_IN_TEMPLATE.findall(block.group(0)))
        elif isinstance(value, list | tuple | set):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
    return found
