"""The fork server's channel: spares handed to the supervisor, and how its task processes exited.

docs/decisions/tasks-fork-from-a-lean-server.md, docs/protocol.md §5. Rules, and why:
- A SOCK_SEQPACKET pair between a supervisor and its slot's fork server, one JSON message per
  packet (``framing.py``): ``SpareReady`` carries the supervisor's end of the new spare's own
  channel as a file descriptor (SCM_RIGHTS).
- The server hands its supervisor a spare ahead of need; the supervisor sends the start of a try
  down the spare's channel itself (``warm.py``), then tells the server the spare was taken
  (``SpareTaken``), so the server is never on the way of a start; the server says how each taken
  task process exited (``TaskProcessExited``) once it has reaped it, being its parent.
- A fork that fails is said as the task channel's ``ErrorResponse``: the try fails with it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from worker.wire.framing import Message
from worker.wire.task import ErrorResponse


class SpareReady(Message):
    """A spare task process waits on the channel sent with this (server → supervisor)."""

    type: Literal["SpareReady"] = "SpareReady"
    pid: int


class SpareTaken(Message):
    """The spare ``pid`` runs a task of ``fileloc`` now (supervisor → server)."""

    type: Literal["SpareTaken"] = "SpareTaken"
    pid: int
    fileloc: str
    # False when the spare stays warm for the supervisor's next tries: the server forks no
    # next spare until ``ForkSpare`` (a spare idle beside a warm process: its private pages).
    next_spare: bool = True


class ForkSpare(Message):
    """Fork a spare now (supervisor → server): it has none, and none is coming."""

    type: Literal["ForkSpare"] = "ForkSpare"


class TaskProcessExited(Message):
    """The server reaped the taken task process ``pid`` (server → supervisor)."""

    type: Literal["TaskProcessExited"] = "TaskProcessExited"
    pid: int
    # As ``os.waitstatus_to_exitcode``: negative when a signal killed it.
    exit_code: int


FromForkServer = Annotated[
    SpareReady | TaskProcessExited | ErrorResponse, Field(discriminator="type")
]
FROM_FORK_SERVER: TypeAdapter[FromForkServer] = TypeAdapter(FromForkServer)
ToForkServer = Annotated[SpareTaken | ForkSpare, Field(discriminator="type")]
TO_FORK_SERVER: TypeAdapter[ToForkServer] = TypeAdapter(ToForkServer)
