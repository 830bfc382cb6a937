"""Frames and the message base: what every channel of the worker's processes shares.

A message is a pydantic model with an ``id`` and a ``type`` equal to its class's name, encoded as
one JSON object; ``type`` is the discriminator a channel's union decodes it by, and a field a
message does not declare is refused, so a peer that drifted fails at once and by name.

Rules, and why:
- On a stream socket (the task's channel, the backend helper's), each frame is a 4-byte big-endian
  length, then that many bytes of UTF-8 JSON: a reader always knows where a message ends,
  whatever language wrote it. A length over ``MAX_FRAME_BYTES`` is a ``ProtocolError``, never an
  allocation of what a broken peer claims.
- On a SOCK_SEQPACKET pair (the fork server's channel, a spare's), the packet is the frame: one
  JSON message per packet, with no length, since the kernel keeps the boundaries and a packet can
  carry file descriptors (SCM_RIGHTS) with its message. A packet is at most ``MAX_PACKET_BYTES``,
  checked by its writer (``packet``: a message that does not fit is never sent, it goes another
  way) and by its reader (``receive_packet``: one the kernel cut short is a ``ProtocolError``,
  never half a message parsed). Unbounded, a packet over the reader's buffer was cut, and one
  over the socket's send buffer (~208 KiB) was refused with EMSGSIZE.
- This package imports nothing of Tradewind but itself: the task process, the fork server, the
  backend helper and the supervisor all load it, and none of them may pull the others' imports in.
"""

from __future__ import annotations

import os
import socket
import struct

from pydantic import BaseModel, ConfigDict

MAX_FRAME_BYTES = 1 << 30
#: The largest packet of a SOCK_SEQPACKET channel: what its reader takes in one read.
MAX_PACKET_BYTES = 1 << 16
_HEADER = struct.Struct(">I")


class ProtocolError(RuntimeError):
    """A frame that cannot be read: truncated, oversized, or not a known message."""


class Message(BaseModel):
    """The base of every message: an ``id``, and no field it does not declare.

    Each subclass adds ``type: Literal["<its class name>"]``, the discriminator of its channel's
    unions (a test checks the name and the literal agree).
    """

    model_config = ConfigDict(extra="forbid")

    id: int = 0


def encode(message: BaseModel) -> bytes:
    """One length-prefixed frame holding ``message``."""
    body = message.model_dump_json().encode()
    return _HEADER.pack(len(body)) + body


def packet(message: BaseModel) -> bytes:
    """``message`` as one packet of a SOCK_SEQPACKET channel; ProtocolError if it is too large."""
    body = message.model_dump_json().encode()
    if len(body) > MAX_PACKET_BYTES:
        name = type(message).__name__
        raise ProtocolError(
            f"a {name} of {len(body)} bytes is over the {MAX_PACKET_BYTES} bytes of a packet"
        )
    return body


def receive_packet(
    sock: socket.socket, max_fds: int = 0, flags: int = 0
) -> tuple[bytes, list[int]]:
    """The next packet of a SOCK_SEQPACKET socket, and the descriptors sent with it (b"": the
    peer closed it). ProtocolError for a packet the kernel cut short (its descriptors closed)."""
    body, fds, got, _address = socket.recv_fds(sock, MAX_PACKET_BYTES, max(max_fds, 1), flags)
    if got & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            os.close(fd)
        raise ProtocolError(f"a packet over {MAX_PACKET_BYTES} bytes, or descriptors, cut short")
    return body, fds


class PreEncoded:
    """A request dumped to JSON once, whose frames differ only in their ``id``.

    For the requests every Python task process sends unchanged (the handshake, ``SucceedTask``):
    building and dumping the model in a freshly forked process cost ~0.25 ms each, mostly
    copy-on-write faults on pydantic's objects.
    """

    def __init__(self, message: Message) -> None:
        # What follows the id, as encode() writes it: every message has a type after its id.
        self._after_id = message.model_dump_json(exclude={"id"}).encode()[1:]

    def frame(self, request_id: int) -> bytes:
        body = b'{"id":%d,%b' % (request_id, self._after_id)
        return _HEADER.pack(len(body)) + body


def read_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes from a blocking socket; EOFError if the peer closes first."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks += chunk
    return bytes(chunks)


def read_frame(sock: socket.socket) -> bytes:
    """The body of the next frame of a blocking socket (the task's and the helper's side)."""
    (size,) = _HEADER.unpack(read_exactly(sock, _HEADER.size))
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME_BYTES} limit")
    return read_exactly(sock, size)


class FrameBuffer:
    """Reassembles frames from a non-blocking socket's reads (the supervisor's side)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME_BYTES:
                raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME_BYTES} limit")
            if len(self._buffer) < _HEADER.size + size:
                break
            frames.append(bytes(self._buffer[_HEADER.size : _HEADER.size + size]))
            del self._buffer[: _HEADER.size + size]
        return frames
