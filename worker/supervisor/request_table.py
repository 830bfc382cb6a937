"""The table of the supervisor's request handlers, written by the handlers themselves.

A handler is a function ``(ctx: TryContext, request: <one request class>) -> reply | None``;
``@handles`` reads the request class from the annotation of its second parameter and registers
the handler for that class. The table (``HANDLERS``) cannot then name a class its handler does not
take, nor drift from the task channel's union of requests: ``@handles`` refuses, at import, a
class that is not in that union and a second handler for one class; that every request of the
union has its handler is tested (tests/worker/test_protocol.py). The table is whole once
``worker/supervisor/requests.py``, which imports every module of handlers, is imported.

Dispatch stays one dict look-up per request (``worker/supervisor/requests.py``'s ``handle``):
nothing here runs after import.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from worker import wire as p
from worker.supervisor.try_context import TryContext

RequestT = TypeVar("RequestT", bound=p.Message)
ReplyT = TypeVar("ReplyT", bound=p.Message | None)

# A handler returns its reply, or None when it replies later through ``ctx.reply_later``.
Handler = Callable[[TryContext, RequestT], ReplyT]

#: The request classes of the task channel: what may be registered.
REQUESTS: frozenset[type[p.Message]] = frozenset(
    typing.get_args(typing.get_args(p.ToSupervisor)[0])
)
# Each entry maps a class to the handler that takes exactly that class (as ``handles`` checked),
# which a dict's type cannot say entry by entry: hence ``Any`` for the request here alone.
HANDLERS: dict[type[p.Message], Handler[Any, p.Message | None]] = {}


def handles(handler: Handler[RequestT, ReplyT]) -> Handler[RequestT, ReplyT]:
    """Register ``handler`` for the request class its second parameter is annotated with.

    Raises TypeError, at import, for a class that is not a request of the task channel or one
    that already has a handler: either is a mistake no test of a single handler would show.
    """
    request_class = request_class_of(handler)
    if request_class not in REQUESTS:
        raise TypeError(f"{handler.__qualname__} takes {request_class!r}, not a task's request")
    if (other := HANDLERS.get(request_class)) is not None:
        both = " and ".join(f"{h.__module__}.{h.__qualname__}" for h in (other, handler))
        raise TypeError(f"{request_class.__name__} has two handlers: {both}")
    HANDLERS[request_class] = handler
    return handler


def request_class_of(handler: Callable[..., Any]) -> Any:
    """The annotation of ``handler``'s second parameter, resolved (``from __future__`` leaves a
    string, evaluated in the handler's module)."""
    parameters = list(inspect.signature(handler).parameters)
    if len(parameters) != 2:
        raise TypeError(f"{handler.__qualname__} must take (ctx, request)")
    return typing.get_type_hints(handler).get(parameters[1])
