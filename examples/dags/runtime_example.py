"""A task in another language: Python writes a text, Node.js counts its words, Python reports.

The middle task is ``@task.runtime``: the supervisor starts ``node word_stats.js`` with the comms
socket inherited, resolves the stub's arguments (the upstream XCom) into the handshake, and
stores what the Node.js task pushes; the downstream Python task reads it like any XCom.
Needs ``node`` on the worker's PATH.
"""

from __future__ import annotations

from pathlib import Path

from tradewind import dag, task

WORD_STATS = Path(__file__).resolve().parent.parent / "runtimes" / "word_stats.js"


@task
def write_text() -> str:
    return "the quick brown fox jumps over the lazy dog; the dog sleeps, the fox runs"


@task.runtime(command=["node", str(WORD_STATS)])
def word_stats(text: str, top: int = 3) -> None:
    """Runs in Node.js (examples/runtimes/word_stats.js); this body never runs."""


@task
def report(stats: dict) -> str:
    top = ", ".join(f"{word} ({count})" for word, count in stats["top"])
    return f"{stats['words']} words; most common: {top}"


@dag(dag_id="runtime_example")
def runtime_example():
    report(word_stats(write_text()))


runtime_example()
