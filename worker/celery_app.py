"""The Celery app (``celery -A worker worker``) and its one task: a message to the supervisor.

The worker runs on Celery's threads pool unless told otherwise (``--pool prefork``): one
interpreter supervises every slot, one supervisor per thread, and the task processes are forked
by fork servers, one per slot, never by this process (which is no longer single-threaded, and a
fork would copy its locks held by other threads). Against prefork that spares a pool process per
slot (each ~55 MB, half of it copies of the main process's pages: docs/benchmarks.md), at no
saving of CPU per try. With prefork, each pool process sets up as the threads pool's main process
does, for its one slot.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import sys
import time
import warnings
from typing import Any

import click
from celery import Celery, concurrency, signals
from celery.concurrency.thread import TaskPool as ThreadsPool
from celery.exceptions import CPendingDeprecationWarning, Reject
from celery.worker.consumer import Consumer as CeleryConsumer
from click.core import ParameterSource
from kombu.exceptions import OperationalError as BrokerUnavailable

from broker_config import (
    EXECUTE_TASK_NAME,
    InvalidMessage,
    make_celery_app,
    parse_message,
    publish_many,
)
from state.core import (
    Retry,
    StoreUnavailable,
    forget_engines_after_fork,
    outage_budget,
    ride_out,
    set_budget,
    set_network_timeout,
    set_pool_size,
    start_flushing,
)
from state.engine import ClaimUnavailable, Enqueue
from state.records import Heart, JobKind, keep_beating
from tradewind.settings import get_settings
from worker.fork_server.client import stop_fork_server, use_fork_server
from worker.supervisor.execute import execute
from worker.threads import SupervisorThreads

log = logging.getLogger("tradewind.worker")
#: How long a supervisor waits for an absent broker to publish the tries an end made ready:
#: TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS, after which the scheduler's queued rescue sends them.
_publish_wait = {"seconds": 60.0}


def create_app() -> Celery:
    settings = get_settings()
    # How long a try waits out an outage of the store (state/core/outage.py); inherited by the pool.
    budget = outage_budget(settings.zombie_threshold_seconds, settings.kill_grace_seconds)
    set_budget(budget)
    # A hung statement must fail well within the budget, so that the try is given up in time.
    set_network_timeout(min(10.0, budget / 2))
    _publish_wait["seconds"] = settings.task_queued_timeout_seconds
    app = make_celery_app(
        settings.broker, settings.broker_folder, "worker", settings.task_sent_events
    )
    app.conf.worker_consumer = f"{__name__}:Consumer"
    app.task(name=EXECUTE_TASK_NAME, bind=True, acks_late=True)(execute_task_instance)
    return app


def execute_task_instance(self: Any, *args: Any, message: Any = None, **unexpected: Any) -> str:
    """Validate the message, then supervise its try; a bad message is logged and dropped."""
    if args or unexpected:
        log.error(
            "dropped broker message: expected one keyword argument 'message', got %d positional "
            "and %s",
            len(args),
            sorted(unexpected) or "no other keywords",
        )
        return "dropped"
    try:
        parsed = parse_message(message)
    except InvalidMessage as error:
        log.error("dropped broker message: %s", error)
        return "dropped"
    app = self.app

    def publish(ready: list[Enqueue]) -> None:
        # Queued in SQL already; sent once the broker is back rather than at the scheduler's
        # queued rescue a minute later (a copy sent twice is dropped by the claim).
        # Past the queued timeout, the scheduler's queued rescue sends them anyway.
        what = f"publishing {len(ready)} downstream tries"
        retry = Retry(what, (BrokerUnavailable,), _any_error, service="the broker")
        retry.budget = _publish_wait["seconds"]
        ride_out(lambda: publish_many(app, ready, handed_over=True), retry)

    try:
        return execute(parsed, get_settings(), publish)
    except ClaimUnavailable as error:
        # Nothing was claimed: the message goes back on its queue, no try consumed.
        log.error("%s: giving the message back", error)
        raise Reject(str(error), requeue=True) from error
    except StoreUnavailable as error:
        log.error("%s: the zombie rule takes the try", error)
        return "lost"


def _any_error(_error: BaseException) -> bool:
    return True


#: Seconds between the consumer's attempts to reach a broker that went away, at most.
RECONNECT_MAX_SECONDS = 1.0
#: How long the task events a worker gathers wait before they go out together (Flower's view
#: of the fleet lags by this much at most).
EVENTS_FLUSH_SECONDS = 0.1
#: A flush this late was lost with its timer (the loop restarted): the next event asks again.
EVENTS_FLUSH_LOST_SECONDS = 2.0


class Consumer(CeleryConsumer):  # type: ignore[misc]
    """Celery's consumer, reconnecting to a broker that came back within a second, and sending
    its task events in batches.

    kombu waits 2 s, then 4, 6... up to 30 s between attempts: after a 60 s Redis outage the
    consumer came back 12 s after Redis did, while the tries it held were done long before and
    their downstream messages waited. Every attempt is one line of Celery's log.
    """

    _events_flush_asked: float | None = None  # time.monotonic() of the pending flush's request

    def on_send_event_buffered(self) -> None:
        """Send the task events gathered for ``EVENTS_FLUSH_SECONDS`` in one message.

        Celery sends what is gathered on the event loop's next turn: 2.5 publishes per try, each
        a round trip to Redis that the loop waits for (0.9 ms each, 2.3 ms of the loop per try
        in a 2,000-task fan-out), while the next message to fetch waited behind them.
        """
        asked, now = self._events_flush_asked, time.monotonic()
        if self.hub is None or (asked is not None and now - asked < EVENTS_FLUSH_LOST_SECONDS):
            return
        self._events_flush_asked = now
        # From any thread (a supervisor's sends task-started): the timer is the loop's alone.
        self.hub.call_soon(self._flush_events_later)

    def _flush_events_later(self) -> None:
        self.hub.call_later(EVENTS_FLUSH_SECONDS, self._flush_gathered_events)

    def _flush_gathered_events(self) -> None:
        self._events_flush_asked = None  # first: an event sent during the flush gets the next
        self._flush_events()

    def ensure_connected(self, conn: Any) -> Any:
        conn.ensure_connection = functools.partial(
            conn.ensure_connection,
            interval_start=0.2,
            interval_step=0.4,
            interval_max=RECONNECT_MAX_SECONDS,
        )
        return super().ensure_connected(conn)


#: What ``celery -A worker worker`` runs when its command line names no ``--pool``.
DEFAULT_POOL = "worker.threads:SupervisorThreads"  # the banner names the module: "(threads)"


def _choose_the_pool(worker: Any) -> None:
    """The threads pool, unless the command line (or CELERY_WORKER_POOL) names another.

    Not through ``app.conf.worker_pool``: Celery's command line takes a ``--pool prefork`` for
    its own default and replaces it with that setting, so a user could not ask for prefork.
    Called before Celery resolves the pool (``worker_init``).
    """
    command = click.get_current_context(silent=True)
    if command is None or "pool" not in command.params:
        return  # a worker made in code: it runs the pool it was given
    if command.get_parameter_source("pool") == ParameterSource.DEFAULT:
        worker.pool_cls = DEFAULT_POOL
    elif concurrency.get_implementation(worker.pool_cls) is ThreadsPool:
        worker.pool_cls = SupervisorThreads  # --pool threads


def _report_metrics() -> None:
    # Each process that supervises tries flushes its own counts (a prefork pool process
    # forgets its parent's at the fork: state/core/metrics.py).
    settings = get_settings()
    if settings.metrics_enabled:
        start_flushing(settings.sql_url, settings.metrics_flush_seconds)


def _worker_starts(sender: Any, **_: Any) -> None:
    _choose_the_pool(sender)
    _report_metrics()
    # What the worker imported (Celery, SQLAlchemy, psycopg: ~80 MB) is shared with the pool
    # processes prefork forks as long as nothing writes to it; the collector of a pool process
    # scans every tracked object, writing to each, and so copied most of it into each of them.
    # Frozen objects are never scanned (and on the threads pool, never scanned again here).
    gc.collect()
    gc.freeze()
    if issubclass(concurrency.get_implementation(sender.pool_cls), ThreadsPool):
        # The supervisors run here, one per thread (Celery sends no worker_process_init).
        slots = _slots(sender.concurrency)
        switch_threads_often()
        set_pool_size(slots)
        use_fork_server(servers=slots)


#: How long a thread holding the GIL keeps it while another waits for it, on the threads pool.
#: Python's 5 ms is a wait added to every hand-over between the supervisors and Celery's consumer
#: (a try's end ready to publish, a message to claim) whenever one of them is busy: warm tries
#: ran at 0.85-0.86 of prefork's rate with it, at 1.02 with 0.5 ms, at the same CPU per try
#: (docs/benchmarks.md, "One interpreter supervising both slots").
SWITCH_INTERVAL_SECONDS = 0.0005


def switch_threads_often() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)


def _slots(concurrency_option: Any) -> int:
    # "auto" is resolved after worker_init: for the threads pool, to the available CPUs.
    if isinstance(concurrency_option, int):
        return concurrency_option
    return len(os.sched_getaffinity(0))


def _fresh_pool_process(**_: Any) -> None:
    # A prefork pool process (or the solo pool's process): one slot. Forked from the worker,
    # its pooled connections are the parent's.
    forget_engines_after_fork()
    use_fork_server()
    _report_metrics()


#: This worker's job row, beating from a thread of the worker's main process (never a pool
#: process's: ``worker_ready`` and ``worker_shutdown`` are sent there only).
_heart: dict[str, Heart] = {}


def _register_the_worker(sender: Any, **_: Any) -> None:
    if "worker" in _heart:  # Celery sends worker_ready once; a second would be a second row
        return
    settings = get_settings()
    name = getattr(sender, "hostname", None)  # the node's name: w1@host
    _heart["worker"] = keep_beating(
        settings.sql_url, JobKind.WORKER, settings.job_heartbeat_seconds, name=name
    )


def _end_the_worker(**_: Any) -> None:
    heart = _heart.pop("worker", None)
    if heart is not None:
        heart.stop()


def _supervisors_done(**_: Any) -> None:
    # The pool process exits, or the threads pool has stopped (its threads' tries are over):
    # every fork server goes, and with it the task processes left (idle warm ones).
    stop_fork_server()


def _say_the_pool(sender: Any, **_: Any) -> None:
    # Once Celery's logging is up (it is not yet at worker_init).
    pool = getattr(sender, "pool", None)
    if isinstance(pool, ThreadsPool):
        log.info(
            "threads pool: %s slots; GIL switch interval %.1f ms",
            pool.limit,
            1000 * sys.getswitchinterval(),
        )


def _quiet_the_cancel_warning(**_: Any) -> None:
    # Celery warns at each broker connection loss that its default for cancelling running
    # tasks changes in 6.0; Tradewind sets it (False) itself, on purpose (broker_config/
    # settings.py). Added once the worker is up: its logging setup puts "always" filters first.
    warnings.filterwarnings(
        "ignore",
        message=r"\s*In Celery 5.1 we introduced an optional breaking change",
        category=CPendingDeprecationWarning,
    )


signals.worker_init.connect(_worker_starts)
signals.worker_process_init.connect(_fresh_pool_process)
signals.worker_process_shutdown.connect(_supervisors_done)
signals.worker_shutdown.connect(_supervisors_done)
signals.worker_shutdown.connect(_end_the_worker)
signals.worker_ready.connect(_register_the_worker)
signals.worker_ready.connect(_quiet_the_cancel_warning)
signals.worker_ready.connect(_say_the_pool)
