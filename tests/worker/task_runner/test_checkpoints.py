"""The checkpoint rules of DESIGN.md §5, class by class, against the in-memory store."""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

import pytest

from worker.task_runner.checkpoint_store import (
    CheckpointStoreError,
    MemoryCheckpointStore,
    StoredBatches,
)
from worker.task_runner.checkpoints import (
    FAILED,
    SKIPPED,
    SUCCESS,
    CheckpointBatch,
    Checkpoints,
    EarlierCheckpoints,
    IndexedTaskOutcome,
    PendingCheckpoints,
)
from worker.task_runner.mapping import Item

GENERATION = 3


def item(index: int, fingerprint: str | None = None) -> Item:
    return Item(index, {"x": index}, fingerprint or f"fp{index}")


def ok(index: int, value: Any = None) -> IndexedTaskOutcome:
    return IndexedTaskOutcome.success(item(index), index * 10 if value is None else value)


def failed(index: int) -> IndexedTaskOutcome:
    error = ValueError(f"item {index} broke")
    return IndexedTaskOutcome.failure(item(index), error, f"ValueError: item {index} broke")


def stored_indexes(store: MemoryCheckpointStore) -> list[int]:
    """Every index in the stored batches, batch by batch, in order."""
    return [
        entry["i"]
        for number in sorted(store.stored.batches)
        for entry in store.stored.batches[number]["outcomes"]
    ]


class FlakyStore(MemoryCheckpointStore):
    """Fails the writes whose (1-based) numbers are in ``failing`` with ``error``."""

    def __init__(self, failing: set[int], error: BaseException | None = None, stores: bool = False):
        super().__init__()
        self.failing = failing
        self.error = error or CheckpointStoreError("database is locked")
        self.stores_before_failing = stores
        self.calls: list[str] = []

    def write_batch(self, number: int, value: Any) -> None:
        self.calls.append(f"batch {number}")
        attempt = len(self.calls)
        if attempt in self.failing:
            if self.stores_before_failing:
                super().write_batch(number, value)
            raise self.error
        super().write_batch(number, value)

    def write_marker(self, value: Any) -> None:
        self.calls.append("marker")
        super().write_marker(value)


# --- IndexedTaskOutcome ----------------------------------------------------------------


def test_an_outcome_round_trips_through_its_entry() -> None:
    for outcome in (ok(1, {"a": [1]}), ok(2, None), failed(3)):
        again = IndexedTaskOutcome.from_entry(outcome.to_entry())
        assert again == outcome
    skipped = IndexedTaskOutcome.skipped(item(4), "nothing to do")
    assert IndexedTaskOutcome.from_entry(skipped.to_entry()) == skipped


def test_a_none_result_is_stored_as_a_success_with_a_none_value() -> None:
    outcome = IndexedTaskOutcome.success(item(7), None)

    assert outcome.to_entry() == {"i": 7, "f": "fp7", "s": SUCCESS, "v": None}


@pytest.mark.parametrize("entry", [None, [], {"i": 1}, {"i": "1", "f": "x", "s": SUCCESS}])
def test_an_entry_this_version_did_not_write_is_ignored(entry: Any) -> None:
    assert IndexedTaskOutcome.from_entry(entry) is None


def test_only_a_failure_under_fail_fast_stops_the_rest() -> None:
    assert failed(1).stops_the_rest(fail_fast=True)
    assert not failed(1).stops_the_rest(fail_fast=False)
    assert not ok(1).stops_the_rest(fail_fast=True)
    assert ok(1).is_final and IndexedTaskOutcome.skipped(item(1), "").is_final
    assert not failed(1).is_final


# --- CheckpointBatch and PendingCheckpoints ---------------------------------------------


def test_a_batch_carries_its_generation() -> None:
    batch = CheckpointBatch(4, GENERATION, (ok(1), failed(2)))

    value = batch.to_value()

    assert value["generation"] == GENERATION
    assert CheckpointBatch.from_value(4, value) == batch
    assert CheckpointBatch.from_value(4, "garbage") is None


def test_pending_outcomes_keep_completion_order_and_a_put_back_goes_first() -> None:
    pending = PendingCheckpoints(round_size=2)
    pending.add(ok(5))
    assert not pending.round_due()
    pending.add(ok(1))
    assert pending.round_due()

    taken = pending.take()
    pending.add(ok(9))
    pending.put_back(taken)

    pending.add(ok(3))
    assert not pending.round_due()  # a round put back waits for a full round more
    pending.add(ok(4))
    assert pending.round_due()
    assert [outcome.index for outcome in pending.take()] == [5, 1, 9, 3, 4]


# --- rule 2: one write per round, in completion order -----------------------------------


@pytest.mark.parametrize(("items", "concurrency"), [(100, 16), (16, 16), (1, 16), (33, 4)])
def test_a_first_try_writes_one_batch_per_round_then_the_marker(
    items: int, concurrency: int
) -> None:
    store = MemoryCheckpointStore()
    checkpoints = Checkpoints(store, GENERATION, concurrency)
    checkpoints.read(is_retry=False)
    finish_order = list(reversed(range(items)))  # completion order, not index order

    for index in finish_order:
        checkpoints.record(ok(index))
    checkpoints.finish({"total": items})

    assert store.reads == 0
    assert len(store.stored.batches) == math.ceil(items / concurrency)
    assert store.writes == math.ceil(items / concurrency) + 1  # and the marker
    assert stored_indexes(store) == finish_order
    sizes = [len(store.stored.batches[n]["outcomes"]) for n in sorted(store.stored.batches)]
    assert all(size == concurrency for size in sizes[:-1])


def test_nothing_is_written_before_a_round_is_full() -> None:
    store = MemoryCheckpointStore()
    checkpoints = Checkpoints(store, GENERATION, 16)

    for index in range(15):
        checkpoints.record(ok(index))

    assert store.writes == 0
    checkpoints.record(ok(15))
    assert store.writes == 1


# --- rule 3: a failed write is kept for the next round ----------------------------------


def test_a_round_that_fails_to_write_is_written_with_the_next_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FlakyStore(failing={2})
    checkpoints = Checkpoints(store, GENERATION, 4)

    for index in range(16):
        checkpoints.record(ok(index))

    assert store.calls == ["batch 0", "batch 1", "batch 1", "batch 2"]
    assert sorted(store.stored.batches) == [0, 1, 2]
    assert len(store.stored.batches[1]["outcomes"]) == 8
    assert stored_indexes(store) == list(range(16))
    assert "checkpoint batch 1 (4 outcomes) not written, kept for the next one" in caplog.text


def test_a_final_write_that_fails_is_logged_and_no_marker_follows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FlakyStore(failing={2})
    checkpoints = Checkpoints(store, GENERATION, 4)
    for index in range(6):
        checkpoints.record(ok(index))

    with caplog.at_level(logging.WARNING):
        assert checkpoints.finish({"total": 6}) is False

    assert store.calls == ["batch 0", "batch 1"]
    assert store.stored.marker is None
    assert "2 outcomes could not be written: those items run again on a retry" in caplog.text


# --- rule 4: the rest, then the marker --------------------------------------------------


def test_the_rest_is_written_before_the_marker() -> None:
    store = FlakyStore(failing=set())
    checkpoints = Checkpoints(store, GENERATION, 4)
    for index in range(6):
        checkpoints.record(ok(index))

    assert checkpoints.finish({"total": 6, "succeeded": 6}) is True

    assert store.calls == ["batch 0", "batch 1", "marker"]
    assert store.stored.marker == {
        "generation": GENERATION,
        "batches": 2,
        "total": 6,
        "succeeded": 6,
    }


# --- rule 5: a retry reads once; the latest entry wins; a gap ends the read ------------


def batches_of(*rounds: list[IndexedTaskOutcome], generation: int = GENERATION) -> dict[int, Any]:
    return {
        number: CheckpointBatch(number, generation, tuple(outcomes)).to_value()
        for number, outcomes in enumerate(rounds)
    }


def test_a_retry_reads_every_batch_in_one_read_and_writes_after_them() -> None:
    store = MemoryCheckpointStore(StoredBatches(batches_of([ok(0), ok(1)], [failed(2)])))
    checkpoints = Checkpoints(store, GENERATION, 2)

    earlier = checkpoints.read(is_retry=True)
    checkpoints.record(ok(2))
    checkpoints.finish({})

    assert store.reads == 1
    assert earlier.batch_count == 2
    assert earlier.replay(item(0)) == ok(0)
    assert earlier.replay(item(2)) is None  # failed: it runs again
    assert sorted(store.stored.batches) == [0, 1, 2]
    assert stored_indexes(store) == [0, 1, 2, 2]


def test_the_latest_entry_of_an_index_wins() -> None:
    stored = batches_of([failed(0), ok(1)], [ok(0, "second")], [failed(1)])

    earlier = EarlierCheckpoints.from_stored(stored, GENERATION)

    assert earlier.replay(item(0)) == ok(0, "second")
    assert earlier.replay(item(1)) is None


def test_reading_stops_at_the_first_missing_batch() -> None:
    stored = batches_of([ok(0)], [ok(1)], [ok(2)])
    del stored[1]

    earlier = EarlierCheckpoints.from_stored(stored, GENERATION)

    assert earlier.batch_count == 1
    assert earlier.replay(item(0)) is not None
    assert earlier.replay(item(2)) is None


def test_a_skipped_item_is_replayed_as_skipped() -> None:
    skipped = IndexedTaskOutcome.skipped(item(0), "no data")

    earlier = EarlierCheckpoints.from_stored(batches_of([skipped]), GENERATION)

    assert earlier.replay(item(0)) == skipped


def test_a_batch_of_an_earlier_generation_is_never_replayed() -> None:
    current = batches_of([ok(0), ok(1)])
    older = batches_of([ok(0)], [ok(1)], [ok(2)], generation=GENERATION - 1)

    assert len(EarlierCheckpoints.from_stored(older, GENERATION)) == 0
    # A new generation that wrote batch 0 over an older run: batch 1 is the older one's.
    mixed = {**older, 0: current[0]}
    earlier = EarlierCheckpoints.from_stored(mixed, GENERATION)
    assert (earlier.batch_count, len(earlier)) == (1, 2)
    assert earlier.replay(item(2)) is None


# --- rule 6: a retry that cannot read fails before anything -----------------------------


def test_a_store_that_cannot_be_read_fails_the_read() -> None:
    class Unreadable(MemoryCheckpointStore):
        def read(self) -> StoredBatches:
            raise CheckpointStoreError("connection refused")

    with pytest.raises(CheckpointStoreError, match="connection refused"):
        Checkpoints(Unreadable(), GENERATION, 4).read(is_retry=True)


# --- rule 8: a changed input never inherits a result ------------------------------------


def test_an_entry_is_reused_only_for_the_same_fingerprint() -> None:
    earlier = EarlierCheckpoints.from_stored(batches_of([ok(0)]), GENERATION)

    assert earlier.replay(item(0, "fp0")) is not None
    assert earlier.replay(item(0, "another input")) is None


# --- rule 9: success clears the batches only --------------------------------------------


def test_clear_deletes_the_batches_and_keeps_the_marker() -> None:
    store = MemoryCheckpointStore()
    checkpoints = Checkpoints(store, GENERATION, 2)
    for index in range(3):
        checkpoints.record(ok(index))
    checkpoints.finish({"total": 3})

    checkpoints.clear()

    assert store.stored.batches == {}
    assert store.stored.marker["total"] == 3


# --- concurrency and interruption --------------------------------------------------------


class SlowStore(MemoryCheckpointStore):
    """A write takes a moment, so rounds meet threads still recording."""

    def __init__(self) -> None:
        super().__init__()
        self.in_write = 0
        self.overlaps = 0

    def write_batch(self, number: int, value: Any) -> None:
        self.in_write += 1
        self.overlaps += self.in_write > 1
        time.sleep(0.001)
        super().write_batch(number, value)
        self.in_write -= 1


def test_outcomes_from_many_threads_at_once_are_each_written_once() -> None:
    store = SlowStore()
    checkpoints = Checkpoints(store, GENERATION, 16)
    threads_count, per_thread = 8, 250
    start = threading.Barrier(threads_count)

    def record_many(first: int) -> None:
        start.wait()
        for index in range(first, first + per_thread):
            checkpoints.record(ok(index))

    threads = [
        threading.Thread(target=record_many, args=(n * per_thread,)) for n in range(threads_count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    checkpoints.finish({})

    total = threads_count * per_thread
    assert sorted(stored_indexes(store)) == list(range(total))
    assert store.overlaps == 0
    assert sorted(store.stored.batches) == list(range(math.ceil(total / 16)))
    assert all(len(batch["outcomes"]) == 16 for batch in store.stored.batches.values())


class GatedStore(MemoryCheckpointStore):
    """Its first write waits for ``gate``: a write in flight for as long as the test wants."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def write_batch(self, number: int, value: Any) -> None:
        self.entered.set()
        assert self.gate.wait(10)
        super().write_batch(number, value)


def test_items_go_on_recording_while_a_round_is_being_written() -> None:
    store = GatedStore()
    checkpoints = Checkpoints(store, GENERATION, 4)
    for index in range(3):
        checkpoints.record(ok(index))
    writer = threading.Thread(target=checkpoints.record, args=(ok(3),))
    writer.start()
    assert store.entered.wait(10)

    for index in range(4, 7):  # most of a round more, recorded while round 0 is in flight
        checkpoints.record(ok(index))
    checkpoints.record(ok(7))  # completes round 1: a writer is busy, so it returns at once

    assert store.stored.batches == {}
    blocked = threading.Thread(target=checkpoints.record, args=(ok(8),))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # a second round behind the write in flight: it waits
    store.gate.set()
    writer.join(10)
    blocked.join(10)
    # The thread that wrote round 0 found round 1 due and wrote it too, in order.
    assert sorted(store.stored.batches) == [0, 1]
    assert stored_indexes(store) == list(range(8))
    checkpoints.finish({})
    assert stored_indexes(store) == list(range(9))


@pytest.mark.parametrize("stored_before_raising", [False, True])
def test_a_base_exception_in_a_write_neither_loses_nor_duplicates(
    stored_before_raising: bool,
) -> None:
    store = FlakyStore(failing={2}, error=KeyboardInterrupt(), stores=stored_before_raising)
    checkpoints = Checkpoints(store, GENERATION, 4)
    for index in range(4):
        checkpoints.record(ok(index))

    for index in range(4, 7):
        checkpoints.record(ok(index))
    with pytest.raises(KeyboardInterrupt):
        checkpoints.record(ok(7))
    for index in range(8, 10):
        checkpoints.record(ok(index))
    checkpoints.finish({})

    # The interrupted round 1 is written again under its own number with what followed.
    assert store.calls == ["batch 0", "batch 1", "batch 1", "marker"]
    assert stored_indexes(store) == list(range(10))


def test_outcome_kinds_are_stored_with_their_status() -> None:
    store = MemoryCheckpointStore()
    checkpoints = Checkpoints(store, GENERATION, 3)
    checkpoints.record(ok(0))
    checkpoints.record(failed(1))
    checkpoints.record(IndexedTaskOutcome.skipped(item(2), "later"))

    statuses = [entry["s"] for entry in store.stored.batches[0]["outcomes"]]

    assert statuses == [SUCCESS, FAILED, SKIPPED]
    assert store.stored.batches[0]["outcomes"][1]["e"] == "ValueError: item 1 broke"
