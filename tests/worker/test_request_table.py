"""Handlers registered from their annotated request class
(``worker/supervisor/request_table.py``)."""

from __future__ import annotations

import pytest

from worker import wire as p
from worker.supervisor.request_table import HANDLERS, handles
from worker.supervisor.requests import succeed_task
from worker.supervisor.try_context import TryContext


def test_a_handler_is_registered_for_the_class_it_is_annotated_with() -> None:
    assert HANDLERS[p.SucceedTask] is succeed_task


def test_a_second_handler_of_a_request_is_refused_and_the_first_kept() -> None:
    def another(ctx: TryContext, request: p.SucceedTask) -> p.Message:
        return p.OKResponse()

    with pytest.raises(TypeError, match="SucceedTask has two handlers"):
        handles(another)
    assert HANDLERS[p.SucceedTask] is succeed_task


def test_a_handler_of_what_is_not_a_task_request_is_refused() -> None:
    def of_a_reply(ctx: TryContext, request: p.OKResponse) -> p.Message:
        return p.OKResponse()

    def of_the_helper(ctx: TryContext, request: p.AwaitXComBackendCall) -> p.Message:
        return p.OKResponse()

    for handler in (of_a_reply, of_the_helper):
        with pytest.raises(TypeError, match="not a task's request"):
            handles(handler)
    assert p.OKResponse not in HANDLERS and p.AwaitXComBackendCall not in HANDLERS


def test_a_handler_must_take_the_context_and_an_annotated_request() -> None:
    def one_parameter(ctx: TryContext) -> p.Message:
        return p.OKResponse()

    def unannotated(ctx, request):  # type: ignore[no-untyped-def]
        return p.OKResponse()

    with pytest.raises(TypeError, match="must take"):
        handles(one_parameter)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a task's request"):
        handles(unannotated)
