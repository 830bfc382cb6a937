"""``@asset``: a function that materializes an asset, as a DAG of one task.

``@asset(schedule=...)`` on ``def name(self, context, other_asset)`` makes the DAG ``name`` with
the task ``name``, whose outlet is the asset (named ``name`` unless given); the decorated name
becomes that ``Asset``, usable in other DAGs' schedules. When the task runs, ``self`` is the
asset, ``context`` the task's context, and any other parameter the asset of that name (an inlet).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from tradewind.assets import Asset
from tradewind.dag import DAG
from tradewind.task import task

#: The assets ``@asset`` made in this process, by name: a parameter names one of them.
_MADE: dict[str, Asset] = {}


def asset(
    *,
    schedule: Any,
    uri: str | None = None,
    name: str | None = None,
    group: str = "asset",
    extra: Mapping[str, Any] | None = None,
    **dag_kwargs: Any,
) -> Callable[[Callable[..., Any]], Asset]:
    """Decorate a function into the one-task DAG that materializes the asset it returns."""

    def decorate(function: Callable[..., Any]) -> Asset:
        made = Asset(name=name or function.__name__, uri=uri, group=group, extra=extra or {})
        inlets = [_named(param) for param in _inlet_names(function)]
        with DAG(made.name or function.__name__, schedule=schedule, **dag_kwargs):
            task(_materializer(function, made), outlets=[made], inlets=inlets)()
        _MADE[str(made.name)] = made
        return made

    return decorate


#: Parameters of an ``@asset`` function that receive a context key, not an inlet asset.
_CONTEXT_KEYS = frozenset(
    {"self", "context", "outlet_events", "inlet_events", "asset_state_store", "ti", "dag_run"}
    | {"params", "run_id", "logical_date", "task_instance", "partition_key", "dag", "task"}
)


def _inlet_names(function: Callable[..., Any]) -> list[str]:
    names = list(inspect.signature(function).parameters)
    return [n for n in names if n not in _CONTEXT_KEYS]


def _named(name: str) -> Asset:
    return _MADE.get(name) or Asset(name=name)


def _materializer(function: Callable[..., Any], made: Asset) -> Callable[..., Any]:
    """The task's callable: it takes the whole context and calls ``function`` as Airflow does."""

    @functools.wraps(function)
    def materialize(**context: Any) -> Any:
        given = {"self": made, "context": context}
        names = inspect.signature(function).parameters
        given.update({n: context[n] for n in names if n in _CONTEXT_KEYS and n in context})
        return function(**{n: given[n] if n in given else _named(n) for n in names})

    del materialize.__wrapped__  # its signature is the context's, not the function's
    return materialize
