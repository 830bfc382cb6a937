"""The embedded broker: kombu's filesystem transport with atomic writes and claims.

kombu's own ``filesystem://`` transport lets a consumer take a message file while the producer is
still writing it; the consumer reads an empty file and its worker dies on the JSON error (seen
here on the first `tradewind standalone` run; kombu#1551). It also claims a file by moving it to
the system temporary folder, which across filesystems is a copy, so two consumers can both take it.

This transport writes each message under a hidden name and renames it into place (a reader only
ever sees complete files), claims a file by renaming it within the same folder tree (exactly one
consumer wins), and moves a file it cannot read as a message (``check_entry``) to the dead
letters with one log line instead of dying. Consumers take
files in name order; kombu names them by milliseconds of uptime, unpadded, so the order broke each
time that number gained a digit and started over at every boot (the queue folder outlives both):
names here start with the wall-clock time in nanoseconds, zero-padded to a fixed width.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.json import dumps

from broker_config.dead_letters import FolderDeadLetters, UndecodableEntry, check_entry, refuse


class Channel(filesystem.Channel):
    # kombu's two base classes disagree on this signature; this one matches its filesystem Channel.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{time.time_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        folder = Path(self.data_folder_out)
        # A leading dot: never matched as a message of any queue while it is being written.
        partial = folder / f".{uuid.uuid4().hex}.partial"
        # kombu's own JSON (it encodes dates, UUIDs and bytes), as its transport does.
        partial.write_bytes(dumps(payload).encode())  # type: ignore[no-untyped-call]
        os.replace(partial, folder / name)

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        wanted = f"{queue}.msg"
        inbox = Path(self.data_folder_in)
        claimed_folder = Path(self.processed_folder)
        for name in sorted(os.listdir(inbox)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = claimed_folder / name
            try:
                os.rename(inbox / name, claimed)  # atomic: one consumer wins
            except OSError:
                continue  # another consumer took it
            payload = claimed.read_bytes()
            claimed.unlink()
            try:
                return check_entry(payload)
            except UndecodableEntry as error:
                refuse(self._dead_letters(), str(queue), payload, error)
        raise Empty()

    def _dead_letters(self) -> FolderDeadLetters:
        folder = self.transport_options.get("dead_letter_folder")
        if folder is None:  # a kombu connection built without Tradewind's options
            folder = Path(self.processed_folder).parent / "dead_letters"
        return FolderDeadLetters(Path(folder))


class Transport(filesystem.Transport):
    Channel = Channel


def install() -> None:
    """Make ``filesystem://`` URLs use this transport in this process."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
