"""A spare's channel, kept by a warm process: the start of each try, and whether it waits for more.

DESIGN.md §7 (``TRADEWIND_TASK_PROCESS_REUSE``), docs/protocol.md §5. Rules, and why:
- A SOCK_SEQPACKET pair between the supervisor and one task process forked ahead (a spare), one
  JSON message per packet (``framing.py``): ``StartTaskProcess`` carries the try's comms socket
  and pipes as file descriptors (SCM_RIGHTS). Its supervisor end reaches the supervisor in the fork
  server's ``SpareReady`` (``fork_server.py``).
- A try starts with one ``StartTaskProcess`` (supervisor -> spare), whatever the reuse; with
  ``then_wait`` the channel outlives the try and the process is warm.
- Its ``details`` ride along only when the packet stays within ``MAX_PACKET_BYTES``
  (``start_packet``): a large conf or params default (the API takes megabytes) is left out, and
  the task process asks for its details with the handshake, on its stream socket, whose frames
  have no such bound. A start too large even so (names of kilobytes) is a ``ProtocolError``.
- Once a warm process's try has said its outcome, and before it closes the try's socket and pipes
  (so the supervisor finds the answer waiting when it sees them close, and never waits for it),
  it says ``TaskProcessIdle`` (the next start may come on this channel) or ``TaskProcessExiting``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from worker.wire.framing import MAX_PACKET_BYTES, Message, ProtocolError, packet
from worker.wire.task import TaskDetails


class StartTaskProcess(Message):
    """Run this task on the comms socket and pipes sent with it (supervisor → spare)."""

    type: Literal["StartTaskProcess"] = "StartTaskProcess"
    fileloc: str
    dag_id: str
    task_id: str
    # The handshake's reply, when the supervisor could give it before the start: the task
    # process then skips the handshake (docs/protocol.md §5).
    details: TaskDetails | None = None
    # TRADEWIND_TASK_PROCESS_REUSE: after this try, say ``TaskProcessIdle`` or
    # ``TaskProcessExiting`` on this channel, and if idle wait on it for the next start.
    then_wait: bool = False


_NAME_CHARS_SHOWN = 100


def start_packet(start: StartTaskProcess) -> bytes:
    """The packet of ``start``: with its details if they fit, else without them (the task
    process then asks for them); ProtocolError if even that is over a packet."""
    for candidate in (start, start.model_copy(update={"details": None})):
        try:
            return packet(candidate)
        except ProtocolError:
            continue
    name = f"{start.dag_id}.{start.task_id}"
    name = name if len(name) <= _NAME_CHARS_SHOWN else name[:_NAME_CHARS_SHOWN] + "..."
    raise ProtocolError(
        f"the start of task {name} is over the {MAX_PACKET_BYTES} "
        "bytes of a packet without its details (its file, DAG or task name is too long)"
    )


class TaskProcessIdle(Message):
    """The try ended cleanly: the next ``StartTaskProcess`` may come on this channel."""

    type: Literal["TaskProcessIdle"] = "TaskProcessIdle"
    pid: int


class TaskProcessExiting(Message):
    """The try left the process unfit for another (a child, a changed cwd...): it exits."""

    type: Literal["TaskProcessExiting"] = "TaskProcessExiting"
    pid: int
    reason: str


FromWarmTaskProcess = Annotated[TaskProcessIdle | TaskProcessExiting, Field(discriminator="type")]
FROM_WARM_TASK_PROCESS: TypeAdapter[FromWarmTaskProcess] = TypeAdapter(FromWarmTaskProcess)
