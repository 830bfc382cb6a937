"""``BaseNotifier``: a callback object that renders its templated fields, then notifies.

Airflow's notifiers (``airflow.sdk.bases.notifier.BaseNotifier``) are given as a task's or a
DAG's callbacks (``on_failure_callback=MyNotifier(...)``) and as a human-in-the-loop task's
``notifiers``: each call renders a copy's ``template_fields`` against the task's context (the
instance keeps its templates for the next call), then calls ``notify(context)``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tradewind.logging_mixin import LoggingMixin
from tradewind.templates import render_value


class BaseNotifier(LoggingMixin):
    """Subclass it: set ``template_fields`` and define ``notify(self, context)``."""

    template_fields: Sequence[str] = ()
    template_ext: Sequence[str] = ()

    def notify(self, context: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define notify(self, context)")

    def render_template_fields(self, context: Mapping[str, Any]) -> None:
        """Render each templated field in place (``__call__`` renders a copy)."""
        dag = context.get("dag")
        if dag is None:
            return

        def unresolved(arg: Any) -> Any:
            raise TypeError(f"{type(self).__name__}: an XComArg cannot be a notifier's field")

        values = dict(context)
        operator = getattr(values.get("task"), "operator", None)
        if operator is not None:  # ``{{ task.options }}`` is a classic operator's, as in Airflow
            values["task"] = operator
        for name in self.template_fields:
            where = f"{type(self).__name__} field {name}"
            value = getattr(self, name, None)
            rendered = render_value(value, values, dag, unresolved, tuple(self.template_ext), where)
            setattr(self, name, rendered)

    def __call__(self, *args: Any) -> None:
        """Called as a callback: with the context (Airflow 2's DAG callbacks pass more)."""
        context = next((arg for arg in args if isinstance(arg, Mapping)), None)
        if context is None:
            raise TypeError(f"{type(self).__name__} was called without a task's context")
        rendered = copy.copy(self)
        rendered.__dict__.pop("_log", None)
        rendered.render_template_fields(context)
        rendered.notify(dict(context))
