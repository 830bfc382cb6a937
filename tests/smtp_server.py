"""A real SMTP server on loopback for the email tests: aiosmtpd in a process of its own.

``python tests/smtp_server.py FOLDER [--refuse]`` listens on a free port of 127.0.0.1, writes
that port to ``FOLDER/port``, and saves each message it takes as ``FOLDER/<n>.eml`` (with its
envelope in ``<n>.json``); with ``--refuse`` it answers every message ``554`` instead.
A test's fixture starts and stops it with ``start_smtp_server``.
"""

from __future__ import annotations

import email
import email.message
import email.policy
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class SmtpServer:
    """The server's port, and the messages it received."""

    port: int
    folder: Path

    def messages(self) -> list[email.message.EmailMessage]:
        found = sorted(self.folder.glob("*.eml"), key=lambda path: int(path.stem))
        return [
            email.message_from_bytes(path.read_bytes(), policy=email.policy.default)  # type: ignore[misc]
            for path in found
        ]

    def envelopes(self) -> list[dict[str, Any]]:
        found = sorted(self.folder.glob("*.json"), key=lambda path: int(path.stem))
        return [json.loads(path.read_text()) for path in found]

    def wait_messages(self, count: int, timeout: float = 30) -> list[email.message.EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(found := self.messages()) >= count:
                return found
            time.sleep(0.1)
        raise AssertionError(f"the SMTP server received {len(self.messages())} of {count}")


def _serve(folder: Path, refuse: bool) -> None:
    from aiosmtpd.controller import Controller

    class Saving:
        count = 0

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            if refuse:
                return "554 Transaction failed: refused by the test server"
            Saving.count += 1
            (folder / f"{Saving.count}.eml").write_bytes(envelope.original_content)
            envelope_json = {"from": envelope.mail_from, "to": envelope.rcpt_tos}
            (folder / f"{Saving.count}.json").write_text(json.dumps(envelope_json))
            return "250 OK"

    controller = Controller(Saving(), hostname="127.0.0.1", port=_free_port())
    controller.start()
    (folder / "port.tmp").write_text(str(controller.port))
    (folder / "port.tmp").rename(folder / "port")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    controller.stop()


def _free_port() -> int:
    # Controller cannot listen on port 0: it connects to its own port to see it serving.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_smtp_server(folder: Path, refuse: bool = False) -> Iterator[SmtpServer]:
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, __file__, str(folder), *(["--refuse"] if refuse else [])]
    process = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 20
        while not (folder / "port").exists():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the test SMTP server did not start")
            time.sleep(0.05)
        yield SmtpServer(int((folder / "port").read_text()), folder)
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    _serve(Path(sys.argv[1]), refuse="--refuse" in sys.argv[2:])
