"""``BaseNotifier``: a callback object that renders its templated fields, then notifies.

Airflow's providers ship notifiers (``SlackNotifier``, ``SmtpNotifier``, ``HttpNotifier``) to
pass as a task's or DAG's ``on_*_callback``, and human-in-the-loop tasks take them as
``notifiers`` (called before the task waits). A callback runs in the task process with the try's
context (``worker/task_runner/runner.py``), so a notifier renders its ``template_fields`` with
the DAG's Jinja environment, as an operator's are, and calls ``notify(context)``. A notifier
that fails is logged; the try's outcome stands, as with any callback.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from tradewind.logging_mixin import LoggingMixin


class BaseNotifier(LoggingMixin):
    """Subclass it: name the attributes to render in ``template_fields``; define ``notify``."""

    template_fields: Sequence[str] = ()
    template_ext: Sequence[str] = ()

    def __init__(self, **kwargs: Any) -> None:
        # Airflow 3.1's notifiers take keyword arguments for its deadline alerts: not acted on.
        self.extra_arguments = kwargs

    def notify(self, context: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define notify(context)")

    def get_template_env(self, dag: Any = None) -> Any:
        from tradewind.templates import environment

        if dag is None:
            raise ValueError(f"{type(self).__name__}: a notifier renders with a DAG's templates")
        return environment(dag)

    def render_template_fields(self, context: dict[str, Any], jinja_env: Any = None) -> None:
        self._do_render_template_fields(self, self.template_fields, context, jinja_env, set())

    def _do_render_template_fields(
        self,
        parent: Any,
        template_fields: Sequence[str],
        context: dict[str, Any],
        jinja_env: Any,
        seen_oids: set[int],
    ) -> None:
        """Render ``parent``'s ``template_fields`` in place (Airflow's name: providers call it
        for the fields they fill in late, from their connection's defaults)."""
        from tradewind.templates import render_value

        values = dict(context)
        operator = getattr(values.get("task"), "operator", None)
        if operator is not None:  # ``{{ task.options }}`` is a classic operator's, as in Airflow
            values["task"] = operator
        for name in template_fields:
            value = getattr(parent, name, None)
            where = f"{type(parent).__name__} field {name}"
            rendered = render_value(value, values, values["dag"], _no_xcom_args, (), where)
            setattr(parent, name, rendered)

    def __call__(self, *args: Any) -> None:
        """As a callback: ``(context)``, or a DAG's callback's arguments (the context first)."""
        context = args[0] if args and isinstance(args[0], dict) else {}
        # A copy renders: the notifier keeps its templates for its next call (one notifier is
        # often shared by several tasks, or called before and after an answer).
        rendered = copy.copy(self)
        rendered.__dict__.pop("_log", None)
        try:
            rendered.render_template_fields(context)
            rendered.notify(context)
        except Exception:
            self.log.exception("%s failed to notify", type(self).__name__)


def _no_xcom_args(value: Any) -> Any:
    raise ValueError(f"a notifier's fields cannot hold task results ({value!r})")
