"""The worker's task events (for Flower) go out in batches, not one publish per event."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kombu.asynchronous import Hub

from worker import celery_app
from worker.celery_app import EVENTS_FLUSH_SECONDS, Consumer


@pytest.fixture
def consumer() -> Iterator[Consumer]:
    # The consumer's batching needs only its event loop: Celery's whole consumer is not built.
    made = Consumer.__new__(Consumer)
    made.hub = Hub()
    made.flushed = 0

    def flush() -> None:
        made.flushed += 1

    made._flush_events = flush
    yield made
    made.hub.close()


def _turn(hub: Hub) -> int:
    """Run what was handed to the loop (as its next turn would); how many callbacks ran."""
    ready = hub._pop_ready()
    for callback in ready:
        callback()
    return len(ready)


def test_the_events_of_a_moment_go_out_in_one_flush(consumer: Consumer) -> None:
    for _ in range(5):  # task-received, -started, -succeeded... of several tries
        consumer.on_send_event_buffered()
    before = time.monotonic()
    assert _turn(consumer.hub) == 1  # one wake-up of the loop, for all five
    (due,) = consumer.hub.timer.queue  # one flush, EVENTS_FLUSH_SECONDS later
    assert due.eta >= before + EVENTS_FLUSH_SECONDS
    assert consumer.flushed == 0
    consumer.on_send_event_buffered()  # an event before the flush: it waits for that one
    assert _turn(consumer.hub) == 0
    time.sleep(EVENTS_FLUSH_SECONDS)
    consumer.hub.fire_timers()
    assert consumer.flushed == 1
    consumer.on_send_event_buffered()  # after a flush, the next event schedules the next
    assert _turn(consumer.hub) == 1
    assert len(consumer.hub.timer.queue) == 1


def test_a_flush_lost_with_the_loop_s_timer_is_asked_for_again(
    consumer: Consumer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(celery_app, "EVENTS_FLUSH_LOST_SECONDS", 3600.0)
    consumer.on_send_event_buffered()
    assert _turn(consumer.hub) == 1
    consumer.hub.timer.clear()  # the consumer's loop restarted without it
    consumer.on_send_event_buffered()
    assert _turn(consumer.hub) == 0  # still taken as on its way...
    monkeypatch.setattr(celery_app, "EVENTS_FLUSH_LOST_SECONDS", 0.0)
    consumer.on_send_event_buffered()
    assert _turn(consumer.hub) == 1  # ...until it is late: asked for again
    time.sleep(EVENTS_FLUSH_SECONDS)
    consumer.hub.fire_timers()
    assert consumer.flushed == 1


def test_the_flush_waits_a_short_moment() -> None:
    # Flower's view lags by this much at most; a longer wait holds more events per publish.
    assert 0.01 <= EVENTS_FLUSH_SECONDS <= 0.5
