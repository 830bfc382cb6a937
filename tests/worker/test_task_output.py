"""A task's output as hostile input: read in linear time, a line capped, a try's log capped, and
secrets masked on every line they span (worker/supervisor/logs.py)."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from worker.supervisor.logs import MASK, LineBuffer, LogLimits, Masker, TryLog

KIB = 1024
MIB = 1024 * KIB
READ_BYTES = 64 * KIB  # what the supervisor's loop reads from a pipe at once


def texts(path: Path) -> list[str]:
    """The log's lines without their timestamps."""
    return [line.split("] ", 1)[1] for line in path.read_text().splitlines()]


def test_a_128_mib_line_without_newline_is_buffered_in_bounded_memory() -> None:
    # Quadratic buffering (the buffered part re-joined with every read) holds the whole line and
    # copies it per read: 128 MiB held and ~128 GiB copied. Linear buffering holds about one cap.
    buffer = LineBuffer(64 * KIB)
    read = b"x" * READ_BYTES
    pieces = 0
    tracemalloc.start()
    try:
        for _ in range(128 * MIB // READ_BYTES):
            pieces += len(buffer.feed(read))
        pieces += len(buffer.end())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pieces == 128 * MIB // (64 * KIB)
    assert peak < 2 * MIB


def test_a_line_is_joined_once_however_many_reads_it_took() -> None:
    buffer = LineBuffer(MIB)
    for _ in range(1000):
        assert buffer.feed(b"ab") == []
    [(line, split)] = buffer.feed(b"c\nnext")
    assert line == b"ab" * 1000 + b"c" and not split
    assert buffer.end() == [(b"next", False)]


def test_a_long_line_is_cut_between_characters_never_inside_one() -> None:
    buffer = LineBuffer(1024)
    pieces = buffer.feed("é".encode() * 1500 + b"\nshort\n")
    assert [goes_on for _, goes_on in pieces] == [True, True, False, False]
    assert b"".join(piece for piece, _ in pieces[:3]).decode() == "é" * 1500
    for piece, _ in pieces:
        assert len(piece) <= 1024
        piece.decode()  # each piece is whole characters


def test_a_split_line_is_said_once_and_its_pieces_follow_in_order(tmp_path: Path) -> None:
    log = TryLog(tmp_path / "1.log", LogLimits(line_max_bytes=1024, max_bytes=MIB))
    log.feed("stdout", b"a" * 2500 + b"\n" + b"b" * 1500 + b"\nshort\n")
    log.close()
    lines = texts(tmp_path / "1.log")
    said = [line for line in lines if "TRADEWIND_TASK_LOG_LINE_MAX_BYTES" in line]
    assert said == [
        "supervisor: a line of stdout is longer than TRADEWIND_TASK_LOG_LINE_MAX_BYTES "
        "(1024 bytes): such lines are written in pieces of at most that size"
    ]
    assert lines[0] == said[0]
    output = lines[1:]
    assert output == [
        "stdout: " + "a" * 1024,
        "stdout: " + "a" * 1024,
        "stdout: " + "a" * 452,
        "stdout: " + "b" * 1024,
        "stdout: " + "b" * 476,
        "stdout: short",
    ]


def test_past_the_size_cap_lines_are_dropped_and_counted_once_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "1.log"
    log = TryLog(path, LogLimits(line_max_bytes=1024, max_bytes=64 * KIB))
    log.line("supervisor", "running")
    for n in range(2000):
        log.feed("stdout", f"line {n:04} {'x' * 90}\n".encode())
    log.line("supervisor", "try 1 ended success")
    log.close()
    lines = texts(path)
    kept = [line for line in lines if line.startswith("stdout: ")]
    assert kept == [f"stdout: line {n:04} {'x' * 90}" for n in range(len(kept))]
    dropped = 2000 - len(kept)
    assert 400 < len(kept) < 2000
    assert lines[len(kept) + 1] == (
        "supervisor: the log reached TRADEWIND_TASK_LOG_MAX_BYTES (65536 bytes): "
        "the task's further output is dropped"
    )
    # The supervisor's own lines are still written; the count comes last, once.
    assert lines[-2:] == [
        "supervisor: try 1 ended success",
        f"supervisor: dropped {dropped} line(s) ({dropped * 100} bytes) of the task's output "
        "past TRADEWIND_TASK_LOG_MAX_BYTES (65536 bytes)",
    ]
    assert path.stat().st_size < 64 * KIB + 1024


def test_a_128_mib_line_fills_the_log_up_to_its_cap_and_no_further(tmp_path: Path) -> None:
    path = tmp_path / "1.log"
    log = TryLog(path, LogLimits(line_max_bytes=64 * KIB, max_bytes=MIB))
    read = b"y" * READ_BYTES
    for _ in range(128 * MIB // READ_BYTES):
        log.feed("stdout", read)
    log.close()
    assert path.stat().st_size < MIB + 2 * KIB
    last = texts(path)[-1]
    assert last.startswith("supervisor: dropped ") and "of the task's output past" in last


def test_a_multi_line_secret_is_masked_on_each_of_its_lines(tmp_path: Path) -> None:
    key = "\n".join(
        [
            "-----BEGIN PRIVATE KEY-----",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
            "q1x2Ue0w3gY9Zk4bJm8vT+y3Q0nF9pW2sS7aQ==",
            "-----END PRIVATE KEY-----",
        ]
    )
    log = TryLog(tmp_path / "1.log", LogLimits(line_max_bytes=1024, max_bytes=MIB))
    log.add_secret(key)
    log.feed("stdout", f"the key:\n{key}\nindented:\n    {key.splitlines()[1]}\n".encode())
    log.close()
    assert texts(tmp_path / "1.log") == [
        "stdout: the key:",
        *["stdout: ***"] * 4,
        "stdout: indented:",
        "stdout:     ***",
    ]
    assert log.mask(f"error: {key}") == f"error: {MASK}"  # a recorded error: masked whole


def test_the_masker_masks_a_secret_holding_another_whole() -> None:
    masker = Masker()
    masker.add("abc")
    masker.add("xxabcxx")
    masker.add("no")  # too short: it would hide half the log
    assert masker.mask("1 xxabcxx 2 abc 3 no") == "1 *** 2 *** 3 no"
    assert masker.mask("a.c") == "a.c"  # a secret is text, not a pattern


def test_many_secrets_registered_between_two_lines_are_compiled_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A task registering secrets in a loop must not rebuild the pattern per secret: that is
    # quadratic, in the worker process that every slot's supervisor shares.
    compiled: list[str] = []
    real_compile = re.compile

    def counting(pattern: str, *args: Any) -> re.Pattern[str]:
        compiled.append(pattern)
        return real_compile(pattern, *args)

    masker = Masker()
    monkeypatch.setattr(re, "compile", counting)
    for n in range(5000):
        masker.add(f"secret-{n:05}")
    assert masker.mask("x secret-04999 y secret-00000") == "x *** y ***"
    assert masker.mask("again secret-01234") == "again ***"
    assert len(compiled) == 1
