"""A real task printing a 128 MiB line without a newline: its supervisor reads it in bounded
memory (so in linear time: no copy of the growing line per read), writes it in pieces said once,
and stops the log at ``TRADEWIND_TASK_LOG_MAX_BYTES`` with one line counting the rest."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_config import message_of
from tests.state.harness import Home, tradewind_home
from worker.supervisor.execute import execute
from worker.supervisor.logs import log_path

MIB = 1024 * 1024
DAG = """
import sys
from tradewind import dag, task

@task
def flood():
    sys.stdout.write("z" * (128 * 1024 * 1024))
    sys.stdout.flush()
    print(file=sys.stderr)
    print("done", file=sys.stderr)

@dag(dag_id="flood")
def flood_dag():
    flood()

flood_dag()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch, task_log_max_bytes=str(MIB)) as made:
        made.write_dag(DAG)
        assert made.sync().import_errors == {}
        yield made


@pytest.mark.timeout(300)
def test_a_128_mib_line_costs_the_supervisor_bounded_memory_and_a_capped_log(home: Home) -> None:
    run_pk = home.trigger("flood")
    [enqueue] = home.schedule(run_pk)
    tracemalloc.start()
    try:
        state = execute(message_of(enqueue), home.settings, lambda _: None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert state == "success"
    # The line buffered whole (as it once was) is 128 MiB by itself.
    assert peak < 32 * MIB
    run = home.run(run_pk)
    path = log_path(home.settings.logs_folder, "flood", run.run_id, "flood", -1, 1)
    assert path.stat().st_size < MIB + 4096
    lines = [line.split("] ", 1)[1] for line in path.read_text().splitlines()]
    said = [line for line in lines if "TRADEWIND_TASK_LOG_LINE_MAX_BYTES" in line]
    assert len(said) == 1
    # The 128 MiB line counts as one line, then stderr's empty line and "done".
    assert lines[-1].startswith("supervisor: dropped 3 line(s) (")
    dropped_bytes = int(re.findall(r"\((\d+) bytes\) of the task's output", lines[-1])[0])
    written = sum(len(line) - len("stdout: ") for line in lines if line.startswith("stdout: "))
    assert written + dropped_bytes == 128 * MIB + len("done")  # stderr's lines were dropped too
    assert "supervisor: try 1 ended success" in lines
