"""Checkpoints of an iterable task: outcomes written in rounds, read once by a retry.

The rules are DESIGN.md §5; each class below holds one of them, and the iterable task reaches
them through two calls, ``Checkpoints.read`` (before any item runs) and ``Checkpoints.record``
(when an item ends), plus ``finish`` (the rest, then the marker) and ``clear`` (on success).

- ``IndexedTaskOutcome``: how one item ended; the fingerprint ties it to the item's input.
- ``CheckpointBatch``: one round as stored under ``_iterable_batch_<n>``, with its generation.
- ``PendingCheckpoints``: outcomes recorded and not yet written, in completion order.
- ``EarlierCheckpoints``: what earlier tries of this generation wrote, the latest entry of an
  index winning, read up to the first missing batch.
- ``CheckpointBatches``: numbers the rounds and writes them; a round that fails keeps its number.

Why rounds: one write per item would put as many requests on the task's single channel as there
are items (and as many reads before a retry could start); one key rewritten with every outcome so
far grows quadratically. See docs/iterable-tasks.md.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from worker.task_runner.checkpoint_store import CheckpointStore, CheckpointStoreError
from worker.task_runner.mapping import Item

log = logging.getLogger("tradewind.iterable")

SUCCESS: Final = "success"
FAILED: Final = "failed"
SKIPPED: Final = "skipped"


@dataclass(frozen=True)
class IndexedTaskOutcome:
    """How one item (an indexed task) ended: a value, an error, or skipped."""

    index: int
    fingerprint: str
    status: str
    value: Any = None
    error: str | None = None
    # The live exception of a failure in this try (not stored: a retry runs the item again).
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def success(cls, item: Item, value: Any) -> IndexedTaskOutcome:
        return cls(item.index, item.fingerprint, SUCCESS, value=value)

    @classmethod
    def failure(cls, item: Item, error: BaseException, text: str) -> IndexedTaskOutcome:
        return cls(item.index, item.fingerprint, FAILED, error=text, exception=error)

    @classmethod
    def skipped(cls, item: Item, reason: str) -> IndexedTaskOutcome:
        return cls(item.index, item.fingerprint, SKIPPED, error=reason or None)

    @property
    def is_final(self) -> bool:
        """Succeeded or skipped: never run again in this generation."""
        return self.status in (SUCCESS, SKIPPED)

    def stops_the_rest(self, fail_fast: bool) -> bool:
        return fail_fast and self.status == FAILED

    def to_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"i": self.index, "f": self.fingerprint, "s": self.status}
        if self.status == SUCCESS:
            entry["v"] = self.value
        elif self.error is not None:
            entry["e"] = self.error
        return entry

    @classmethod
    def from_entry(cls, entry: Any) -> IndexedTaskOutcome | None:
        """The outcome an entry stands for; None for anything this version did not write."""
        if not isinstance(entry, dict) or entry.get("s") not in (SUCCESS, FAILED, SKIPPED):
            return None
        if not isinstance(entry.get("i"), int) or not isinstance(entry.get("f"), str):
            return None
        return cls(entry["i"], entry["f"], entry["s"], entry.get("v"), entry.get("e"))


@dataclass(frozen=True)
class CheckpointBatch:
    """One round of outcomes, stored as ``{"generation": g, "outcomes": [entries]}``."""

    number: int
    generation: int
    outcomes: tuple[IndexedTaskOutcome, ...]

    def to_value(self) -> dict[str, Any]:
        entries = [outcome.to_entry() for outcome in self.outcomes]
        return {"generation": self.generation, "outcomes": entries}

    @classmethod
    def from_value(cls, number: int, value: Any) -> CheckpointBatch | None:
        if not isinstance(value, dict) or not isinstance(value.get("outcomes"), list):
            return None
        outcomes = [IndexedTaskOutcome.from_entry(entry) for entry in value["outcomes"]]
        kept = tuple(outcome for outcome in outcomes if outcome is not None)
        return cls(number, value.get("generation", -1), kept)


class PendingCheckpoints:
    """Outcomes recorded but not written yet, in the order the items finished.

    Not locked on its own: ``Checkpoints`` holds its one lock around every use.
    """

    def __init__(self, round_size: int) -> None:
        self.round_size = round_size
        self._outcomes: list[IndexedTaskOutcome] = []
        self._due_at = round_size

    def __len__(self) -> int:
        return len(self._outcomes)

    def add(self, outcome: IndexedTaskOutcome) -> None:
        self._outcomes.append(outcome)

    def round_due(self) -> bool:
        return len(self._outcomes) >= self._due_at

    def backlogged(self) -> bool:
        """More than the round that is due: the next one has started."""
        return len(self._outcomes) > self._due_at

    def take(self) -> list[IndexedTaskOutcome]:
        """The round that is due: ``round_size`` outcomes, or more after a failed write."""
        taken, self._outcomes = self._outcomes[: self._due_at], self._outcomes[self._due_at :]
        self._due_at = self.round_size
        return taken

    def take_all(self) -> list[IndexedTaskOutcome]:
        taken, self._outcomes = self._outcomes, []
        self._due_at = self.round_size
        return taken

    def put_back(self, outcomes: list[IndexedTaskOutcome]) -> None:
        """A round that was not written goes back in front, to be written with the next one.

        Not sooner: a store refusing writes for a moment must not get one attempt per outcome.
        """
        self._outcomes[:0] = outcomes
        self._due_at = len(self._outcomes) + self.round_size


class EarlierCheckpoints:
    """The outcomes earlier tries of this generation wrote, by index (the latest entry wins)."""

    def __init__(self, outcomes: Mapping[int, IndexedTaskOutcome], batch_count: int) -> None:
        self._outcomes = dict(outcomes)
        #: Batches 0..batch_count-1 were read; this try writes from ``batch_count`` on.
        self.batch_count = batch_count

    @classmethod
    def nothing(cls) -> EarlierCheckpoints:
        return cls({}, 0)

    @classmethod
    def from_stored(cls, batches: Mapping[int, Any], generation: int) -> EarlierCheckpoints:
        """Batches in order until the first missing one (or one of another generation)."""
        outcomes: dict[int, IndexedTaskOutcome] = {}
        number = 0
        while number in batches:
            batch = CheckpointBatch.from_value(number, batches[number])
            if batch is None or batch.generation != generation:
                break  # a clear started over: what an earlier generation wrote never counts
            outcomes.update((outcome.index, outcome) for outcome in batch.outcomes)
            number += 1
        return cls(outcomes, number)

    def __len__(self) -> int:
        return len(self._outcomes)

    def replay(self, item: Item) -> IndexedTaskOutcome | None:
        """The outcome to reuse for ``item``: finished, and for this very input; else None."""
        outcome = self._outcomes.get(item.index)
        if outcome is None or not outcome.is_final or outcome.fingerprint != item.fingerprint:
            return None
        return outcome


class CheckpointBatches:
    """Writes rounds as numbered batches: a round that fails is not numbered, so no gap."""

    def __init__(self, store: CheckpointStore, generation: int, next_number: int) -> None:
        self._store = store
        self._generation = generation
        self.next_number = next_number

    def write(self, outcomes: list[IndexedTaskOutcome]) -> bool:
        """One store write; False (logged) when the store refused it."""
        batch = CheckpointBatch(self.next_number, self._generation, tuple(outcomes))
        try:
            self._store.write_batch(batch.number, batch.to_value())
        except CheckpointStoreError as error:
            log.warning(
                "checkpoint batch %d (%d outcomes) not written, kept for the next one: %s",
                batch.number,
                len(outcomes),
                error,
            )
            return False
        # The log's one line per round: an item's success is on the items view, not here.
        counts = Counter(outcome.status for outcome in outcomes)
        log.info(
            "checkpoint batch %d written: %d outcomes (%d succeeded, %d failed, %d skipped)",
            batch.number,
            len(outcomes),
            counts[SUCCESS],
            counts[FAILED],
            counts[SKIPPED],
        )
        self.next_number += 1
        return True

    def write_marker(self, summary: dict[str, Any]) -> None:
        value = {"generation": self._generation, "batches": self.next_number, **summary}
        try:
            self._store.write_marker(value)
        except CheckpointStoreError as error:
            log.warning("checkpoint completion marker not written: %s", error)


class Checkpoints:
    """An iterable task instance's checkpoints, behind ``read`` and ``record``.

    One lock guards the pending outcomes and whose turn it is to write. The thread whose outcome
    completes a round takes it and writes it with the lock released, so the other items go on
    finishing (and recording) during the write; one write is in flight at a time, rounds are
    numbered in order, and an outcome is taken by exactly one write.
    """

    def __init__(self, store: CheckpointStore, generation: int, round_size: int) -> None:
        self._store = store
        self._generation = generation
        self._lock = threading.Condition(threading.Lock())
        self._writing = False
        self._pending = PendingCheckpoints(round_size)
        self._batches = CheckpointBatches(store, generation, 0)

    def read(self, is_retry: bool) -> EarlierCheckpoints:
        """Every batch of earlier tries, in one store read; a first try reads nothing.

        A store that cannot be read raises ``CheckpointStoreError``: the task must fail before
        running any item, since an item whose checkpoint says "done" would run again.
        """
        if not is_retry:
            return EarlierCheckpoints.nothing()
        earlier = EarlierCheckpoints.from_stored(self._store.read().batches, self._generation)
        self._batches.next_number = earlier.batch_count
        return earlier

    def record(self, outcome: IndexedTaskOutcome) -> None:
        """Keep ``outcome``; when a round is full and nobody is writing, write it."""
        with self._lock:
            self._pending.add(outcome)
            # One more round may fill during a write, not more: what a hard kill loses stays
            # the round in flight and the next one (and the items running), however slow the
            # store is.
            while self._writing and self._pending.backlogged():
                self._lock.wait()
            if self._writing or not self._pending.round_due():
                return
            self._writing = True
        try:
            while (outcomes := self._take_round_or_release()) is not None:
                self._write(outcomes)
        except BaseException:
            self._release()
            raise

    def finish(self, summary: dict[str, Any]) -> bool:
        """The rest, then the completion marker: the marker only follows what it covers."""
        with self._turn():
            outcomes = self._take_all()
            if outcomes is not None and not self._write(outcomes):
                log.warning(
                    "%d outcomes could not be written: those items run again on a retry",
                    len(outcomes),
                )
                return False
            self._batches.write_marker(summary)
            return True

    def write_rest(self) -> None:
        """What is pending, without a marker: the try is being stopped before its end."""
        with self._turn():
            outcomes = self._take_all()
            if outcomes is not None:
                self._write(outcomes)

    def clear(self) -> None:
        """After a success: the batches go; the marker and the user's own keys stay."""
        self._store.clear_batches()

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """The writer's turn, once the write in flight (if any) is done; then given back."""
        with self._lock:
            while self._writing:
                self._lock.wait()
            self._writing = True
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            self._writing = False
            self._lock.notify_all()

    def _take_round_or_release(self) -> list[IndexedTaskOutcome] | None:
        """The round that is due; else the turn is given back, under the same lock, so a round
        completed meanwhile is never left behind by a writer that is about to stop."""
        with self._lock:
            if self._pending.round_due():
                self._lock.notify_all()  # room for the items waiting on a backlog
                return self._pending.take()
            self._writing = False
            self._lock.notify_all()
            return None

    def _take_all(self) -> list[IndexedTaskOutcome] | None:
        with self._lock:
            return self._pending.take_all() if self._pending else None

    def _write(self, outcomes: list[IndexedTaskOutcome]) -> bool:
        written = False
        try:
            written = self._batches.write(outcomes)
        finally:
            # Also on a BaseException (SIGTERM, an interrupt) in the middle of the write: the
            # outcomes go back, and the next write reuses this batch's number, so an outcome
            # is neither lost nor stored twice.
            if not written:
                with self._lock:
                    self._pending.put_back(outcomes)
        return written
