"""Frames waiting to go out on a non-blocking socket, written as fast as the reader takes them.

The supervisor's loop must never wait on a reader: a task (or helper) slow to read a 64 MiB
reply would otherwise hold up heartbeats for as long as it takes (measured here: a minute).
"""

from __future__ import annotations

import socket
from collections import deque


class Outbox:
    """Queue frames with ``put``; ``flush`` writes what the socket accepts without blocking."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._frames: deque[memoryview] = deque()

    def __bool__(self) -> bool:
        return bool(self._frames)

    def put(self, frame: bytes) -> None:
        self._frames.append(memoryview(frame))

    def clear(self) -> None:
        self._frames.clear()

    def flush(self) -> None:
        """Write until the socket would block; ``OSError`` (the reader is gone) propagates."""
        while self._frames:
            try:
                sent = self._sock.send(self._frames[0])
            except BlockingIOError:
                return
            if sent == len(self._frames[0]):
                self._frames.popleft()
            else:
                self._frames[0] = self._frames[0][sent:]
