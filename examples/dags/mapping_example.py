"""Dynamic task mapping: one task instance per file, made at run time, then one reduce.

``list_files`` returns the files to process; ``count_lines.expand(name=...)`` makes one mapped task
instance per file (the grid shows them as one cell with counts; the task's page lists each
index); ``total`` receives every result as one list, in index order. A mapped task instance is a
task instance like any other: it has its own tries, log and XCom.

Run it with ``tradewind standalone --run mapping_example``.
"""

from __future__ import annotations

from airflow.sdk import dag, task


@task
def list_files() -> list[str]:
    return [f"exports/day-{day:02d}.csv" for day in range(1, 8)]


@task
def count_lines(name: str) -> int:
    day = int(name[-6:-4])
    return 1000 + 37 * day  # pretend to read the file


@task
def total(counts: list[int]) -> str:
    return f"{len(counts)} files, {sum(counts)} lines"


@dag(dag_id="mapping_example", tags=["example"])
def mapping_example():
    total(count_lines.expand(name=list_files()))


mapping_example()
