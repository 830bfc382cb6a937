"""The wire (``worker/wire/``): message models, each channel's unions, and frames."""

from __future__ import annotations

import ast
import datetime as dt
import inspect
import os
import socket
import struct
import typing
from collections.abc import Iterator
from types import ModuleType

import pytest
from pydantic import BaseModel, ValidationError

from worker import wire as p
from worker.supervisor.request_table import request_class_of
from worker.supervisor.requests import HANDLERS
from worker.wire import fork_server, framing, helper, task, warm

CHANNELS = (task, helper, fork_server, warm)


def message_classes() -> list[type[p.Message]]:
    """Every message, from the channel module that defines it."""
    return [
        cls
        for channel in CHANNELS
        for _, cls in inspect.getmembers(channel, inspect.isclass)
        if issubclass(cls, p.Message) and cls.__module__ == channel.__name__
    ]


def union_members(union: object) -> set[type]:
    """The classes of an ``Annotated[A | B | ..., Field(discriminator=...)]`` union."""
    inner = typing.get_args(union)[0]
    return set(typing.get_args(inner))


REQUESTS = union_members(p.ToSupervisor)
REPLIES = union_members(p.ToTask)
# The backend helper's channel: its own asks and answers, and the calls sent to it.
FROM_HELPER = union_members(p.FromHelper)
TO_HELPER = union_members(p.ToHelper)
# The fork server's channels: spares and exit reports to the pool process, which says which spare
# it took, and sends a spare its task.
FROM_FORK_SERVER = union_members(p.FromForkServer)
TO_FORK_SERVER = union_members(p.ToForkServer)
TO_SPARE = {p.StartTaskProcess}
# A warm task process says, on the spare's channel, whether it waits for another try.
FROM_WARM = union_members(p.FromWarmTaskProcess)


@pytest.mark.parametrize("cls", message_classes(), ids=lambda cls: cls.__name__)
def test_every_message_class_name_equals_its_type(cls: type[p.Message]) -> None:
    assert cls.model_fields["type"].default == cls.__name__


def test_every_message_travels_in_exactly_one_direction() -> None:
    assert REQUESTS.isdisjoint(REPLIES)
    assert FROM_HELPER.isdisjoint(TO_HELPER)
    assert set(message_classes()) == (
        REQUESTS
        | REPLIES
        | FROM_HELPER
        | TO_HELPER
        | FROM_FORK_SERVER
        | TO_FORK_SERVER
        | TO_SPARE
        | FROM_WARM
    )
    assert {p.TaskProcessIdle, p.TaskProcessExiting} == FROM_WARM
    assert {p.SpareReady, p.TaskProcessExited, p.ErrorResponse} == FROM_FORK_SERVER
    assert {p.SpareTaken, p.ForkSpare} == TO_FORK_SERVER
    # The helper's look-ups are the task's requests; only its call traffic is its own.
    helper_asks, helper_gets = FROM_HELPER - REQUESTS, TO_HELPER - REPLIES
    assert helper_asks == {p.AwaitXComBackendCall, p.XComBackendResult}
    assert helper_gets == {p.XComBackendCall}


def test_each_channel_module_defines_the_messages_of_its_channel() -> None:
    defined = {
        channel: {c for c in message_classes() if c.__module__ == channel.__name__}
        for channel in CHANNELS
    }
    assert defined[task] == REQUESTS | REPLIES
    assert defined[helper] == (FROM_HELPER | TO_HELPER) - REQUESTS - REPLIES
    assert defined[fork_server] == (FROM_FORK_SERVER | TO_FORK_SERVER) - REPLIES
    assert defined[warm] == TO_SPARE | FROM_WARM


def defined_names(module: ModuleType) -> set[str]:
    """The public names a module defines itself (classes, functions, assignments)."""
    names = set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            names.add(ast.unparse(target))
    return {name for name in names if not name.startswith("_")}


def test_the_face_exports_every_public_name_of_the_framing_and_the_channels() -> None:
    defined = set().union(*(defined_names(module) for module in (framing, *CHANNELS)))
    assert defined == set(p.__all__)
    assert len(p.__all__) == len(set(p.__all__))


def test_every_request_has_exactly_one_handler_and_every_handler_a_request() -> None:
    assert set(HANDLERS) == REQUESTS
    # Each handler is registered for the class it is annotated to take.
    assert {cls: request_class_of(handler) for cls, handler in HANDLERS.items()} == {
        cls: cls for cls in REQUESTS
    }


def test_replies_are_results_or_the_two_responses() -> None:
    names = {cls.__name__ for cls in REPLIES}
    assert {"OKResponse", "ErrorResponse", "TaskDetails"} <= names
    odd = {n for n in names if not n.endswith(("Result", "Response"))} - {"TaskDetails"}
    assert odd == set()


SAMPLE_REQUESTS: list[BaseModel] = [
    p.GetTaskDetails(id=1, protocol_version=p.PROTOCOL_VERSION),
    p.GetXCom(id=2, task_id="up", key="k", map_index=3),
    p.GetXCom(id=3, task_id="up"),
    p.SetXCom(id=4, key="return_value", value={"nested": [1, 2.5, None, "ü"]}),
    p.GetStateValue(id=5, key="cursor"),
    p.SetStateValue(
        id=6, key="cursor", value=[1], expires_at=dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    ),
    p.DeleteStateValue(id=7, key="cursor"),
    p.ClearStateValues(id=8),
    p.MaskSecret(id=9, value="hunter2"),
    p.SucceedTask(id=10),
    p.FailTask(id=11, error="ValueError: no", retryable=False),
    p.SkipTask(id=12, reason="nothing to do"),
]
SAMPLE_REPLIES: list[BaseModel] = [
    p.TaskDetails(
        id=1,
        dag_id="d",
        run_id="r",
        task_id="t",
        map_index=-1,
        try_number=2,
        max_tries=3,
        generation=1,
        params={"x": 1},
        run_type="manual",
        logical_date=dt.datetime(2024, 5, 1, tzinfo=dt.UTC),
    ),
    p.XComResult(id=2, found=True, value=[1, "two"]),
    p.XComResult(id=3, found=False),
    p.StateValueResult(id=4, found=True, value={"a": 1}),
    p.OKResponse(id=5),
    p.ErrorResponse(id=6, error="TryFenced: gone"),
]


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    with left, right:
        yield left, right


@pytest.mark.parametrize("message", SAMPLE_REQUESTS, ids=lambda m: type(m).__name__)
def test_a_request_round_trips_through_a_socket(
    pair: tuple[socket.socket, socket.socket], message: BaseModel
) -> None:
    task_end, supervisor_end = pair
    task_end.sendall(p.encode(message))
    assert p.TO_SUPERVISOR.validate_json(p.read_frame(supervisor_end)) == message


@pytest.mark.parametrize("message", SAMPLE_REPLIES, ids=lambda m: type(m).__name__)
def test_a_reply_round_trips_through_a_socket(
    pair: tuple[socket.socket, socket.socket], message: BaseModel
) -> None:
    task_end, supervisor_end = pair
    supervisor_end.sendall(p.encode(message))
    assert p.TO_TASK.validate_json(p.read_frame(task_end)) == message


def test_a_frame_is_a_big_endian_length_then_utf8_json() -> None:
    frame = p.encode(p.OKResponse(id=7))
    (size,) = struct.unpack(">I", frame[:4])
    assert size == len(frame) - 4
    assert frame[4:] == b'{"id":7,"type":"OKResponse"}'


@pytest.mark.parametrize(
    "message",
    [
        p.GetTaskDetails(protocol_version=p.PROTOCOL_VERSION),
        p.SucceedTask(),
        p.SkipTask(reason="x"),
    ],
    ids=lambda m: type(m).__name__,
)
@pytest.mark.parametrize("request_id", [1, 9, 12345678901])
def test_a_pre_encoded_request_frames_as_encode_does(message: p.Message, request_id: int) -> None:
    frame = p.PreEncoded(message).frame(request_id)
    assert frame == p.encode(message.model_copy(update={"id": request_id}))
    assert message.id == 0  # the model it was made from is left as it was


def test_a_frame_written_by_hand_is_read_as_its_message(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    # As a runtime task in another language writes it: a big-endian length, then JSON.
    task_end, supervisor_end = pair
    body = b'{"type": "SucceedTask", "id": 3}'
    task_end.sendall(struct.pack(">I", len(body)) + body)
    assert p.TO_SUPERVISOR.validate_json(p.read_frame(supervisor_end)) == p.SucceedTask(id=3)


def test_read_frame_reports_a_peer_that_closed_mid_frame(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    task_end, supervisor_end = pair
    task_end.sendall(p.encode(p.SucceedTask(id=1))[:-3])
    task_end.close()
    with pytest.raises(EOFError):
        p.read_frame(supervisor_end)


def test_a_request_of_unknown_type_or_with_extra_fields_is_refused() -> None:
    with pytest.raises(ValidationError):
        p.TO_SUPERVISOR.validate_json(b'{"type": "DropTables", "id": 1}')
    with pytest.raises(ValidationError):
        p.TO_SUPERVISOR.validate_json(b'{"type": "SucceedTask", "id": 1, "extra": true}')
    with pytest.raises(ValidationError):
        p.TO_SUPERVISOR.validate_json(p.encode(p.OKResponse(id=1))[4:])  # a reply, not a request


def frames(*messages: BaseModel) -> bytes:
    return b"".join(p.encode(message) for message in messages)


def test_frame_buffer_holds_a_partial_frame_until_it_is_complete() -> None:
    data = frames(p.SetXCom(id=1, key="k", value="x" * 100))
    buffer = p.FrameBuffer()
    for byte in range(len(data) - 1):
        assert buffer.feed(data[byte : byte + 1]) == []
    [frame] = buffer.feed(data[-1:])
    assert p.TO_SUPERVISOR.validate_json(frame) == p.SetXCom(id=1, key="k", value="x" * 100)


def test_frame_buffer_splits_several_frames_of_one_read() -> None:
    messages = [p.SucceedTask(id=1), p.MaskSecret(id=2, value="s3cret"), p.ClearStateValues(id=3)]
    data = frames(*messages)
    buffer = p.FrameBuffer()
    # Two whole frames and the start of the third, then the rest.
    cut = len(frames(*messages[:2])) + 2
    first = buffer.feed(data[:cut])
    rest = buffer.feed(data[cut:])
    assert [p.TO_SUPERVISOR.validate_json(f) for f in first + rest] == messages
    assert (len(first), len(rest)) == (2, 1)
    assert buffer.feed(b"") == []


def test_frame_buffer_passes_an_empty_body_on_to_validation() -> None:
    [frame] = p.FrameBuffer().feed(struct.pack(">I", 0))
    assert frame == b""
    with pytest.raises(ValidationError):
        p.TO_SUPERVISOR.validate_json(frame)


def oversized_header() -> bytes:
    return struct.pack(">I", p.MAX_FRAME_BYTES + 1)


def test_an_oversized_frame_is_a_protocol_error_in_the_buffer() -> None:
    buffer = p.FrameBuffer()
    assert buffer.feed(frames(p.SucceedTask(id=1))) != []
    with pytest.raises(p.ProtocolError, match="over the"):
        buffer.feed(oversized_header())


def test_an_oversized_frame_is_a_protocol_error_on_a_blocking_read(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    task_end, supervisor_end = pair
    task_end.sendall(oversized_header())
    with pytest.raises(p.ProtocolError, match=str(p.MAX_FRAME_BYTES)):
        p.read_frame(supervisor_end)


def test_a_frame_at_the_limit_is_not_refused_by_its_header() -> None:
    buffer = p.FrameBuffer()
    assert buffer.feed(struct.pack(">I", p.MAX_FRAME_BYTES) + b"{") == []


# --- packets: the SOCK_SEQPACKET channels (the fork server's, a spare's) -----------------------


@pytest.fixture
def packets() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with left, right:
        yield left, right


def details(params: dict[str, object]) -> p.TaskDetails:
    return p.TaskDetails(
        dag_id="d",
        run_id="r",
        task_id="t",
        map_index=-1,
        try_number=1,
        max_tries=1,
        generation=1,
        params=params,
        run_type="manual",
    )


def test_a_packet_is_the_message_s_json_with_no_length() -> None:
    assert p.packet(p.SpareReady(pid=7)) == b'{"id":0,"type":"SpareReady","pid":7}'


def test_a_message_over_a_packet_is_refused_by_its_writer() -> None:
    with pytest.raises(p.ProtocolError, match=r"a StartTaskProcess of \d+ bytes is over the 65536"):
        p.packet(p.StartTaskProcess(fileloc="/f.py", dag_id="d", task_id="x" * p.MAX_PACKET_BYTES))


def test_a_packet_round_trips_with_its_descriptors(
    packets: tuple[socket.socket, socket.socket],
) -> None:
    left, right = packets
    read_end, write_end = os.pipe()
    socket.send_fds(left, [p.packet(p.SpareReady(pid=3))], [read_end])
    body, fds = p.receive_packet(right, max_fds=1)
    assert p.FROM_FORK_SERVER.validate_json(body) == p.SpareReady(pid=3)
    assert len(fds) == 1
    for fd in (*fds, read_end, write_end):
        os.close(fd)


def test_a_packet_the_kernel_cut_short_is_a_protocol_error_not_half_a_message(
    packets: tuple[socket.socket, socket.socket],
) -> None:
    left, right = packets
    left.send(b"{" + b" " * p.MAX_PACKET_BYTES + b"}")  # one byte over what a reader takes
    with pytest.raises(p.ProtocolError, match="cut short"):
        p.receive_packet(right)


def test_a_start_carries_its_details_when_they_fit_byte_for_byte_as_before() -> None:
    start = p.StartTaskProcess(fileloc="/f.py", dag_id="d", task_id="t", details=details({}))
    assert p.start_packet(start) == start.model_dump_json().encode()


@pytest.mark.parametrize("size", [70_000, 300_000, 2_000_000])
def test_a_start_whose_details_do_not_fit_leaves_them_to_the_handshake(size: int) -> None:
    start = p.StartTaskProcess(
        fileloc="/f.py", dag_id="d", task_id="t", details=details({"blob": "x" * size})
    )
    sent = p.StartTaskProcess.model_validate_json(p.start_packet(start))
    assert sent == start.model_copy(update={"details": None})
    assert start.details is not None  # the caller's start is left as it was


def test_a_start_too_large_without_its_details_names_the_task() -> None:
    start = p.StartTaskProcess(fileloc="/f.py", dag_id="d", task_id="t" * 70_000)
    with pytest.raises(p.ProtocolError, match=r"start of task d\.t{98}\.\.\. is over the 65536"):
        p.start_packet(start)
