"""Connection and Variable look-ups over the comms channel, shared by task and helper clients."""

from __future__ import annotations

from collections.abc import Callable

from tradewind.connections import Connection
from worker import wire as p


class LookupFailed(LookupError):
    """The supervisor could not answer a look-up (an unknown connection, a store error)."""


def connection_of(reply: p.Message) -> Connection:
    if isinstance(reply, p.ErrorResponse):
        raise LookupFailed(reply.error)
    assert isinstance(reply, p.ConnectionResult)
    return Connection(
        conn_id=reply.conn_id,
        conn_type=reply.conn_type,
        host=reply.host,
        login=reply.login,
        password=reply.password,
        schema=reply.schema_,
        port=reply.port,
        extra=reply.extra,
    )


def variable_of(reply: p.Message) -> str | None:
    if isinstance(reply, p.ErrorResponse):
        raise LookupFailed(reply.error)
    assert isinstance(reply, p.VariableResult)
    return reply.value if reply.found else None


class CommsLookups:
    """``Lookups`` for a backend, asking through ``request`` (a send-then-read of one frame)."""

    def __init__(self, request: Callable[[p.Message], p.Message]) -> None:
        self._request = request

    def get_connection(self, conn_id: str) -> Connection:
        return connection_of(self._request(p.GetConnection(conn_id=conn_id)))

    def get_variable(self, key: str) -> str | None:
        return variable_of(self._request(p.GetVariable(key=key)))
