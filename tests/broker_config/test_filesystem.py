"""The embedded broker's transport: complete files only, one consumer per message."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import kombu
import pytest

from broker_config import filesystem
from broker_config.dead_letters import FolderDeadLetters
from broker_config.names import dead_letter_folder, filesystem_folders
from tests.broker_config.envelopes import envelope


def _connection(folder: Path) -> kombu.Connection:
    filesystem.install()
    return kombu.Connection("filesystem://localhost/", transport_options=filesystem_folders(folder))


def test_a_message_being_written_is_never_taken(tmp_path: Path) -> None:
    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        # What a producer leaves while it writes: only the hidden partial file exists.
        (tmp_path / "queue" / ".abc.partial").write_text("")
        channel._put("default", envelope("one"))
        assert channel._get("default")["body"] == "one"
        assert (tmp_path / "queue" / ".abc.partial").exists()


def test_an_unreadable_message_file_goes_to_the_dead_letters_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        # Named to sort before any message this transport names (a time first, zero-padded).
        (tmp_path / "queue" / "00000000000000000000_x.default.msg").write_text("")
        (tmp_path / "queue" / "00000000000000000001_y.default.msg").write_text('{"body": "x"}')
        channel._put("default", envelope("next"))
        assert channel._get("default")["body"] == "next"
    letters = FolderDeadLetters(dead_letter_folder(tmp_path)).all()
    assert [(letter.queue, letter.entry) for letter in letters] == [
        ("default", b""),
        ("default", b'{"body": "x"}'),
    ]
    assert letters[0].reason.startswith("not JSON: Expecting value")
    assert letters[1].reason == "not a kombu envelope: no 'properties' object"
    lines = [r.message for r in caplog.records if "dead letters" in r.message]
    assert lines == [
        f"moved an entry of {size} bytes from queue 'default' to the dead letters: {letter.reason}"
        for size, letter in zip((0, 13), letters, strict=True)
    ]


def test_each_message_goes_to_exactly_one_of_many_consumers(tmp_path: Path) -> None:
    with _connection(tmp_path) as producer:
        for n in range(300):
            producer.default_channel._put("default", envelope(str(n)))
    taken: list[int] = []
    lock = threading.Lock()

    def consume() -> None:
        with _connection(tmp_path) as connection:
            channel = connection.default_channel
            while True:
                try:
                    message = channel._get("default")
                except queue.Empty:
                    return
                with lock:
                    taken.append(int(message["body"]))

    threads = [threading.Thread(target=consume) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(300))


def test_messages_come_out_in_the_order_they_went_in_across_a_digit_and_a_reboot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wall-clock nanoseconds just before and after a power of ten (kombu's uptime milliseconds
    # sorted 999 after 1000, and restarted at zero on each boot).
    clock = iter([9_999_999_999, 10_000_000_001, 10_000_000_002])
    monkeypatch.setattr(filesystem.time, "time_ns", lambda: next(clock))
    with _connection(tmp_path) as connection:
        channel = connection.default_channel
        for n in range(3):
            channel._put("default", envelope(str(n)))
        assert [channel._get("default")["body"] for _ in range(3)] == ["0", "1", "2"]
