"""The floor's Celery app: raw Celery plus the steps DESIGN.md requires of every try, and nothing
else (``bench/fleet_floor.py`` drives it).

Per message: claim the try in PostgreSQL (a compare-and-set ``UPDATE``), start a process for it
and wait for its end, record the end (a fenced ``UPDATE``). ``FLOOR_STEPS`` says how the process
is started and what it does; each level adds to the ones before it:

- ``sql``: no process at all (the two statements only);
- ``fork``: a bare interpreter serving as fork server forks a child that exits at once;
- ``authoring``: the fork server has imported ``tradewind`` and the DAG file (as any fork server
  must, so that a task does not import them per try);
- ``authoring+reply``: the child also sends one frame on a socket and waits for the reply, and the
  pool process writes the try's log file in a directory of its own (DESIGN.md §7's layout);
- ``worker``: the fork server has imported what Tradewind's own fork server imports (the
  protocol, the runner), the child exiting at once;
- ``worker+reply``: both.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from celery import Celery
from celery.signals import worker_process_init

from broker_config.settings import celery_settings

BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
DATABASE = os.environ.get("FLOOR_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
STEPS = os.environ.get("FLOOR_STEPS", "sql")
LOGS = Path(os.environ.get("FLOOR_LOGS", "/tmp/floor-logs"))
SERVER = Path(__file__).with_name("floor_fork_server.py")

app = Celery("floor_bench", set_as_current=False)
app.conf.update(celery_settings(BROKER, Path("/tmp/unused")))

_connection: Any = None
_server: socket.socket | None = None


@worker_process_init.connect
def _open(**_: Any) -> None:
    """One connection and one fork server per pool process, as Tradewind keeps them."""
    global _connection, _server
    _connection = psycopg.connect(DATABASE, autocommit=True)
    if STEPS != "sql":
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        subprocess.Popen(
            [sys.executable, str(SERVER), str(theirs.fileno()), STEPS], pass_fds=[theirs.fileno()]
        )
        theirs.close()
        _server = ours


@app.task(name="floor.try")
def run_try(ti_id: int, try_number: int) -> None:
    claimed = _connection.execute(
        "UPDATE floor_ti SET state = 'running', pid = %s, start_date = clock_timestamp()"
        " WHERE id = %s AND try_number = %s AND state = 'queued'",
        (os.getpid(), ti_id, try_number),
    ).rowcount
    if claimed != 1:
        return
    if _server is not None:
        _run_process(ti_id)
    _connection.execute(
        "UPDATE floor_ti SET state = 'success', end_date = clock_timestamp()"
        " WHERE id = %s AND try_number = %s AND state = 'running'",
        (ti_id, try_number),
    )


def _run_process(ti_id: int) -> None:
    assert _server is not None
    if not STEPS.endswith("+reply"):
        socket.send_fds(_server, [b"start"], [])
        _server.recv(16)  # the server says the child ended
        return
    folder = LOGS / f"t{ti_id}" / "-1"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "1.log").open("a") as log:
        log.write("running\n")
    ours, theirs = socket.socketpair()
    socket.send_fds(_server, [b"start"], [theirs.fileno()])
    theirs.close()
    ours.recv(64)  # the child's one request
    ours.sendall(b'{"type": "OkResponse"}')
    _server.recv(16)
    ours.close()
