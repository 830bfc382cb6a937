"""A wire with delay and loss between two interfaces: what ``tc netem`` does, in user space.

This machine's kernel is built without ``sch_netem`` (``CONFIG_NET_SCH_NETEM`` is not set, and
there are no modules to load), so the harness puts this relay in a host's link instead: every
Ethernet frame that arrives on one interface is sent out of the other after ``--delay-ms``, unless
it is dropped (``--loss``, a probability per frame and per direction). Frames are read and written
with their virtio-net header (``PACKET_VNET_HDR``), so segmentation and checksum offloads pass
through untouched: without it a large TCP segment could not be sent on as one frame.

    python impair.py IFACE_A IFACE_B --delay-ms 25 --loss 0.01

It runs until SIGTERM, in the namespace that holds both interfaces.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import random
import selectors
import signal
import socket
import time
from types import FrameType

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
FRAME_BYTES = 65536 + 64  # a whole GSO frame and its virtio-net header
Pending = collections.deque[tuple[float, bytes]]


def open_port(interface: str) -> socket.socket:
    """A raw socket on ``interface`` that reads every frame arriving there, header and all."""
    port = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    port.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    port.bind((interface, ETH_P_ALL))
    port.setblocking(False)
    return port


def relay(a: socket.socket, b: socket.socket, delay_s: float, loss: float) -> None:
    """Forward frames both ways, each ``delay_s`` late or dropped with probability ``loss``."""
    queues: dict[socket.socket, Pending] = {a: collections.deque(), b: collections.deque()}
    other = {a: b, b: a}
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    with selectors.DefaultSelector() as selector:
        selector.register(a, selectors.EVENT_READ)
        selector.register(b, selectors.EVENT_READ)
        while not stopping:
            for key, _ in selector.select(_wait(queues)):
                _take(key.fileobj, queues[other[key.fileobj]], delay_s, loss)  # type: ignore[index,arg-type]
            _send_due(queues)


def _take(port: socket.socket, towards: Pending, delay_s: float, loss: float) -> None:
    while True:
        try:
            data, address = port.recvfrom(FRAME_BYTES)
        except BlockingIOError:
            return
        # A packet socket also sees the frames sent out of its own interface: ours.
        if address[2] == socket.PACKET_OUTGOING or random.random() < loss:
            continue
        towards.append((time.monotonic() + delay_s, data))


def _send_due(queues: dict[socket.socket, Pending]) -> None:
    now = time.monotonic()
    for port, pending in queues.items():
        while pending and pending[0][0] <= now:
            data = pending.popleft()[1]
            # The interface is down or its queue full: a frame lost, as on a wire.
            with contextlib.suppress(OSError):
                port.send(data)


def _wait(queues: dict[socket.socket, Pending]) -> float:
    due = [pending[0][0] for pending in queues.values() if pending]
    return max(0.0, min(due) - time.monotonic()) if due else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--loss", type=float, default=0.0)
    args = parser.parse_args()
    relay(open_port(args.a), open_port(args.b), args.delay_ms / 1000, args.loss)


if __name__ == "__main__":
    main()
