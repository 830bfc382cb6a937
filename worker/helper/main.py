"""The backend helper process: runs the storage backends for its supervisor, the configured
XCom backend (a runtime task's XComs, a retry's purges) and the state store's object-storage
backend (any task's large state values), as ``XComBackendCall.backend`` says.

Started per try as ``python -m worker.helper.main`` with its comms socket's fd in
``TRADEWIND_COMMS_FD``. It asks for a call (``AwaitXComBackendCall``), runs it, and answers
with the result (``XComBackendResult``), which is also how it asks for the next call, until the
supervisor sends ``exit``. Connection and Variable look-ups of the backend are requests to the
supervisor like a task's. A fresh interpreter, not a fork: the backend's clients and threads
(s3fs runs an event loop thread) are never shared with the supervisor.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import sys
from collections.abc import Callable

from tradewind.settings import Settings, SettingsError, get_settings
from worker import wire as p
from worker.process import COMMS_FD_ENV, die_with_parent
from worker.task_runner.lookups import CommsLookups, LookupFailed
from worker.xcom.base import Lookups, XComBackend
from worker.xcom.calls import run_call
from worker.xcom.configured import make_backend


class HelperChannel:
    """Send one frame, read its reply: the helper, like a task, only asks."""

    def __init__(self, comms: socket.socket) -> None:
        self._comms = comms
        self._ids = itertools.count(1)

    def request(self, message: p.Message) -> p.Message:
        message.id = next(self._ids)
        self._comms.sendall(p.encode(message))
        reply: p.Message = p.TO_HELPER.validate_json(p.read_frame(self._comms))
        return reply

    def next_call(self, message: p.Message) -> p.XComBackendCall:
        reply = self.request(message)
        if not isinstance(reply, p.XComBackendCall):
            raise p.ProtocolError(f"expected an XComBackendCall, got {type(reply).__name__}")
        return reply


class _Unusable(XComBackend):
    """Stands in for a backend that could not be built: every call fails with why."""

    def __init__(self, error: str) -> None:
        self.error = error

    def store(self, where: object, value: object) -> object:
        raise SettingsError(self.error)

    def load(self, where: object, row: object) -> object:
        raise SettingsError(self.error)

    def purge(self, where: object, row: object) -> None:
        raise SettingsError(self.error)


class Backends:
    """The XCom backend, built at start; the state store's, built for its first call."""

    def __init__(self, lookups: CommsLookups) -> None:
        self._lookups = lookups
        self.xcom = self._build(make_backend)
        self._state: XComBackend | None = None

    def of(self, call: p.XComBackendCall) -> XComBackend:
        if call.backend == "xcom":
            return self.xcom
        if self._state is None:
            # Imported here: a helper serving only XComs never loads the state store's code.
            from worker.state_store.object_storage import ObjectStorageStateBackend

            self._state = self._build(ObjectStorageStateBackend.from_settings)
        return self._state

    def _build(self, make: Callable[[Settings, Lookups], XComBackend]) -> XComBackend:
        try:
            return make(get_settings(), self._lookups)
        except (SettingsError, LookupFailed) as error:
            # Answer each call with the reason rather than exit: "helper exited" would hide it.
            return _Unusable(str(error))


def serve(comms: socket.socket) -> None:
    channel = HelperChannel(comms)
    backends = Backends(CommsLookups(channel.request))
    call = channel.next_call(p.AwaitXComBackendCall())
    while call.operation != "exit":
        call = channel.next_call(run_call(backends.of(call), call))


def main() -> int:
    die_with_parent()
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    comms = socket.socket(fileno=int(os.environ[COMMS_FD_ENV]))
    try:
        serve(comms)
    except EOFError:
        return 0  # the supervisor went away: nothing left to answer
    return 0


if __name__ == "__main__":
    sys.exit(main())
