"""The human-in-the-loop operators (``HITLOperator``, ``ApprovalOperator``,
``HITLBranchOperator``, ``HITLEntryOperator``): a task that waits for a person's answer.

``execute`` calls the notifiers, then ends the try ``awaiting_input`` with its question
(``TaskAwaitingInput``): no slot is held and no trigger runs while it waits. A person answers on
the task's page or through the API (``PATCH .../hitlDetails``); the same try then resumes in
``execute_complete`` with the answer, whose result is the task's XCom. ``response_timeout`` (or,
as in Airflow, an ``execution_timeout`` given instead) lets ``defaults`` answer, or fails the
task when there are none. docs/hitl.md tells the whole story.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote, urlencode

from tradewind.branching import Choice
from tradewind.exceptions import AirflowException, TaskAwaitingInput
from tradewind.operators import BaseOperator
from tradewind.params import Param, ParamValidationError
from tradewind.standard.branch import ChoosingOperator


class HITLTimeoutError(AirflowException):
    """Nobody answered before the response timeout, and the question has no defaults."""


class HITLTriggerEventError(AirflowException):
    """The answer could not be taken (an error event)."""


class HITLRejectException(AirflowException):
    """An approval was rejected, and the operator fails on a rejection."""


def _form_field(name: str, given: Any) -> dict[str, Any]:
    """A form field as the store and the API keep it: ``{value, description, schema}``."""
    param = given if isinstance(given, Param) else Param(given)
    schema = dict(param.schema)
    description = schema.pop("description", None) or param.description
    value = param.value if param.has_value else None
    return {"value": value, "description": description, "schema": schema}


class HITLOperator(BaseOperator):
    """Ask a person to choose among ``options`` (several when ``multiple``), and fill in the
    form ``params`` describes; the answer is the task's result:
    ``{"chosen_options", "params_input", "responded_at", "responded_by_user"}``."""

    template_fields: ClassVar[Sequence[str]] = ("subject", "body")

    def __init__(
        self,
        *,
        subject: str,
        options: list[str],
        body: str | None = None,
        defaults: str | list[str] | None = None,
        multiple: bool = False,
        params: Mapping[str, Any] | None = None,
        notifiers: Any = None,
        assigned_users: Any = None,
        response_timeout: dt.timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        execution_timeout = kwargs.pop("execution_timeout", None)
        if response_timeout is None and execution_timeout is not None:
            # As Airflow: a timeout given as execution_timeout bounds the wait for the answer.
            response_timeout = execution_timeout
        elif execution_timeout is not None:
            kwargs["execution_timeout"] = execution_timeout
        super().__init__(**kwargs)
        where = f"{type(self).__name__} {self.task_id}"
        self.subject = subject
        self.body = body
        self.options = list(options or [])
        self.defaults = [defaults] if isinstance(defaults, str) else defaults
        self.multiple = bool(multiple)
        self.params = dict(params or {})
        self.notifiers = _as_list(notifiers)
        self.assigned_users = _as_list(assigned_users)
        if isinstance(response_timeout, int | float) and not isinstance(response_timeout, bool):
            response_timeout = dt.timedelta(seconds=response_timeout)
        if response_timeout is not None and not isinstance(response_timeout, dt.timedelta):
            raise ValueError(f"{where}: response_timeout must be a timedelta")
        self.response_timeout = response_timeout
        self._check(where)

    def _check(self, where: str) -> None:
        if not self.options:
            raise ValueError(f'{where}: "options" cannot be empty')
        if "_options" in self.params:
            raise ValueError(f'{where}: "_options" is not allowed in params')
        if self.defaults is not None:
            if not set(self.defaults) <= set(self.options):
                raise ValueError(
                    f'{where}: defaults "{self.defaults}" should be a subset of options '
                    f'"{self.options}"'
                )
            if not self.multiple and len(self.defaults) > 1:
                raise ValueError(f'{where}: more than one default given when "multiple" is False')
        for user in self.assigned_users:
            if not isinstance(user, Mapping) or "id" not in user:
                raise ValueError(f'{where}: each of assigned_users is {{"id": ..., "name": ...}}')

    @property
    def serialized_params(self) -> dict[str, dict[str, Any]]:
        """The form's fields: ``{name: {value, description, schema}}``."""
        return {name: _form_field(name, given) for name, given in self.params.items()}

    def question(self) -> dict[str, Any]:
        """What is asked, as the store keeps it."""
        return {
            "subject": self.subject,
            "body": self.body,
            "options": self.options,
            "multiple": self.multiple,
            "defaults": self.defaults,
            "params": self.serialized_params,
            "assigned_users": [
                {"id": str(user["id"]), "name": str(user.get("name") or user["id"])}
                for user in self.assigned_users
            ],
        }

    def execute(self, context: dict[str, Any]) -> Any:
        self.log.info("Waiting for a response to: %s", self.subject)
        for notifier in self.notifiers:
            notifier(context)
        raise TaskAwaitingInput(
            method_name="execute_complete",
            timeout=self.response_timeout,
            question=self.question(),
        )

    def execute_complete(self, context: dict[str, Any], event: dict[str, Any]) -> Any:
        """The answer (or its defaults): checked again, then the task's result."""
        if "error" in event:
            if event.get("error_type") == "timeout":
                raise HITLTimeoutError(f"{self.task_id}: {event['error']}")
            raise HITLTriggerEventError(f"{self.task_id}: {event['error']}")
        chosen = list(event["chosen_options"])
        given = dict(event.get("params_input") or {})
        self.validate_chosen_options(chosen)
        self.validate_params_input(given)
        who = event.get("responded_by_user")
        if who:
            self.log.info("Answered by %s: %s", who.get("name"), chosen)
        else:
            self.log.info("No answer before the timeout: the defaults %s answer", chosen)
        at = event.get("responded_at")
        return {  # an XCom is JSON: the time as ISO 8601
            "chosen_options": chosen,
            "params_input": given,
            "responded_at": at.isoformat() if isinstance(at, dt.datetime) else at,
            "responded_by_user": who,
        }

    def validate_chosen_options(self, chosen_options: list[str]) -> None:
        if unknown := set(chosen_options) - set(self.options):
            raise ValueError(f"Responses {unknown} not in {self.options}")

    def validate_params_input(self, params_input: Mapping[str, Any]) -> None:
        if self.params and params_input and set(self.params) ^ set(params_input):
            raise ValueError(f"params_input {dict(params_input)} does not match params")
        for name, value in params_input.items():
            field = self.serialized_params.get(name)
            if field is None:
                continue
            try:
                Param(value, **field["schema"]).resolve(name=name)
            except ParamValidationError as error:
                raise ValueError(str(error)) from None

    def generate_link_to_ui(
        self,
        *,
        task_instance: Any,
        base_url: str | None = None,
        options: str | list[str] | None = None,
        params_input: Mapping[str, Any] | None = None,
    ) -> str:
        """The task page where a person answers (``options`` and ``params_input`` prefill its
        form)."""
        query: list[tuple[str, Any]] = []
        chosen = [options] if isinstance(options, str) else list(options or [])
        if unknown := set(chosen) - set(self.options):
            raise ValueError(f"options {unknown} are not valid options")
        query += [("_options", option) for option in chosen]
        if params_input:
            if unknown := set(params_input) - set(self.params):
                raise ValueError(f"params {unknown} are not valid params")
            query += list(params_input.items())
        if task_instance.map_index >= 0:
            query.append(("map_index", task_instance.map_index))
        if not base_url:
            from tradewind.settings import get_settings

            base_url = get_settings().public_url
        path = "/dags/{}/runs/{}/tasks/{}".format(
            *(
                quote(str(part), safe="")
                for part in (task_instance.dag_id, task_instance.run_id, task_instance.task_id)
            )
        )
        return f"{base_url.rstrip('/')}{path}" + (f"?{urlencode(query)}" if query else "")

    @staticmethod
    def generate_link_to_ui_from_context(
        *,
        context: Mapping[str, Any],
        base_url: str | None = None,
        options: list[str] | None = None,
        params_input: Mapping[str, Any] | None = None,
    ) -> str:
        task = context["task"]
        operator = getattr(task, "operator", None) or task  # the context's task or operator
        if not isinstance(operator, HITLOperator):
            raise ValueError("generate_link_to_ui_from_context supports HITLOperator tasks only")
        return operator.generate_link_to_ui(
            task_instance=context["task_instance"],
            base_url=base_url,
            options=options,
            params_input=params_input,
        )


@dataclass(frozen=True)
class _ApprovalChoice(Choice):
    """A short circuit on the answer: an approval lets everything run, a rejection skips."""

    def follow(self, chooser: Any, result: Any) -> tuple[str, ...] | None:
        chosen = (result or {}).get("chosen_options") or []
        return None if ApprovalOperator.APPROVE in chosen else ()


class ApprovalOperator(HITLOperator, ChoosingOperator):
    """Approve or Reject. A rejection succeeds and skips what follows (every task after it
    with ``ignore_downstream_trigger_rules=True``, else its direct downstream tasks and the
    trigger rules decide the rest); with ``fail_on_reject=True`` it fails instead."""

    APPROVE = "Approve"
    REJECT = "Reject"
    FIXED_ARGS = ("options", "multiple")

    def __init__(
        self,
        *,
        ignore_downstream_trigger_rules: bool = False,
        fail_on_reject: bool = False,
        **kwargs: Any,
    ) -> None:
        for name in self.FIXED_ARGS:
            if name in kwargs:
                raise ValueError(f"Passing {name} to ApprovalOperator is not allowed.")
        self.ignore_downstream_trigger_rules = bool(ignore_downstream_trigger_rules)
        self.fail_on_reject = bool(fail_on_reject)
        super().__init__(options=[self.APPROVE, self.REJECT], multiple=False, **kwargs)

    def choice(self) -> Choice:
        return _ApprovalChoice("short_circuit", self.ignore_downstream_trigger_rules)

    def execute_complete(self, context: dict[str, Any], event: dict[str, Any]) -> Any:
        result = super().execute_complete(context, event)
        if self.REJECT in result["chosen_options"]:
            if self.fail_on_reject:
                raise HITLRejectException(f'{self.task_id}: the answer was "Reject"')
            self.log.info("Rejected: skipping the downstream tasks")
        else:
            self.log.info("Approved: the downstream tasks run")
        return result


class HITLBranchOperator(HITLOperator, ChoosingOperator):
    """The chosen options name the tasks (or task groups) to follow, directly or through
    ``options_mapping``; the other direct downstream tasks are skipped."""

    def __init__(self, *, options_mapping: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.options_mapping = dict(options_mapping or {})
        if unknown := sorted(set(self.options_mapping) - set(self.options)):
            raise ValueError(
                f"`options_mapping` contains keys that are not in `options`: {unknown}"
            )
        bad = {k: v for k, v in self.options_mapping.items() if not isinstance(v, str)}
        if bad:
            raise ValueError(f"`options_mapping` values must be strings (task_ids): {bad}")

    def execute_complete(self, context: dict[str, Any], event: dict[str, Any]) -> Any:
        result = super().execute_complete(context, event)
        follow = [self.options_mapping.get(option, option) for option in result["chosen_options"]]
        self.log.info("Following %s", follow)
        return follow


class HITLEntryOperator(HITLOperator):
    """A form to fill in (``params``), confirmed with one option: "OK" unless given."""

    OK = "OK"

    def __init__(self, **kwargs: Any) -> None:
        if "options" not in kwargs:
            kwargs["options"] = [self.OK]
            kwargs.setdefault("defaults", [self.OK])
        super().__init__(**kwargs)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Mapping) or not isinstance(value, Iterable) or isinstance(value, str):
        return [value]
    return list(value)
