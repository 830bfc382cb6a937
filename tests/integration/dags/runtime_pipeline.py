"""Python -> Node.js -> Python: the runtime example's tasks, in the integration fleet's folder."""

from __future__ import annotations

from pathlib import Path

from tradewind import dag, task

WORD_STATS = Path(__file__).resolve().parents[3] / "examples" / "runtimes" / "word_stats.js"


@task
def write_text() -> str:
    return "tradewind runs tasks in any language; tasks in node read what python wrote " * 20


@task.runtime(command=["node", str(WORD_STATS)], retries=1, retry_delay=0.2)
def word_stats(text: str, top: int = 2) -> None:
    """Runs in Node.js: examples/runtimes/word_stats.js."""


@task
def report(stats: dict, distinct: int) -> str:
    top = ", ".join(f"{word}={count}" for word, count in stats["top"])
    return f"{stats['words']} words, {distinct} distinct; top: {top}"


@dag(dag_id="runtime_pipeline")
def runtime_pipeline():
    stats = word_stats(write_text())
    report(stats, stats["distinct"])


runtime_pipeline()
