"""Tradewind's threads pool (``celery -A worker worker``'s default): Celery's, able to end its
running tries. Its own module, so that the worker's banner reads "concurrency: 2 (threads)"."""

from __future__ import annotations

from typing import Any

from celery.concurrency.thread import TaskPool as ThreadsPool

from worker.fork_server.client import kill_fork_servers
from worker.process import kill_executed


class SupervisorThreads(ThreadsPool):  # type: ignore[misc]
    """Celery's threads pool, able to end its running tries (what ``--pool threads`` runs).

    Celery asks the pool to terminate each running task at a cold shutdown (SIGQUIT), and for a
    revoke with ``terminate``; its threads pool raises NotImplementedError there, and the
    interpreter's exit then waits for every try to end. A supervisor thread cannot be stopped
    from outside, but its task can: every slot's fork server is killed, and its task processes
    with it, and so are the runtime tasks and XCom helpers the supervisors started. Each
    supervisor then records its try as killed (retried if tries are left), as prefork's
    terminated pool processes leave theirs to the zombie rule. One thread cannot be told from
    another here: a revoke with ``terminate`` ends every try of the worker.
    """

    def terminate_job(self, pid: int, signal: Any = None) -> None:
        kill_fork_servers()
        kill_executed()  # runtime tasks and XCom helpers: the supervisors' own children
