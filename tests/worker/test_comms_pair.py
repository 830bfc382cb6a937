"""A try's comms socket blocks on the task's side whatever the process's default timeout was
when it was made (kombu sets one for a moment while Celery closes its connections)."""

from __future__ import annotations

import fcntl
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from worker.process import comms_pair


@pytest.fixture
def default_timeout() -> Iterator[None]:
    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(0.5)
    yield
    socket.setdefaulttimeout(before)


def test_both_ends_block_under_a_default_timeout(default_timeout: None) -> None:
    near, far = comms_pair()
    with near, far:
        for end in (near, far):
            assert fcntl.fcntl(end.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK == 0
            assert end.gettimeout() is None


def test_the_task_side_waits_for_a_late_answer_as_a_socket_made_from_its_number_does(
    default_timeout: None,
) -> None:
    # The task process rebuilds its end from the descriptor (warm_loop.run_try) and reads it
    # blocking: an answer that comes late must be waited for, not an EAGAIN.
    near, far = comms_pair()
    socket.setdefaulttimeout(None)
    task_side = socket.socket(fileno=os.dup(far.fileno()))
    later = threading.Timer(0.3, near.sendall, (b"late answer",))
    later.start()
    try:
        assert task_side.recv(64) == b"late answer"
    finally:
        later.join()
        for end in (near, far, task_side):
            end.close()
