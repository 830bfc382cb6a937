"""Where an iterable task's checkpoints go: the base, the supervisor's store, and a stub.

``CheckpointStore`` is the four calls ``checkpoints.py`` needs. In a task process it is
``SupervisorCheckpointStore``: each call is one request to the supervisor, which keeps the rows
in the SQL store (``state/records/checkpoints.py``). ``MemoryCheckpointStore`` keeps them in a dict,
for tests and for running an iterable task's logic without a supervisor; it counts its calls.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Protocol

from tradewind import xcom_values
from worker import wire as p
from worker.task_runner.runner import RequestFailed


class CheckpointStoreError(RuntimeError):
    """A checkpoint read or write the store refused or could not do."""


@dataclass
class StoredBatches:
    """What a store holds for one task instance: batch values by number, and the marker."""

    batches: dict[int, Any] = field(default_factory=dict)
    marker: Any = None


class CheckpointStore(Protocol):
    def read(self) -> StoredBatches: ...

    def write_batch(self, number: int, value: Any) -> None: ...

    def write_marker(self, value: Any) -> None: ...

    def clear_batches(self) -> None: ...


class Requester(Protocol):
    def request(self, message: p.Message) -> p.Message: ...


class SupervisorCheckpointStore:
    """Checkpoints through the supervisor: one request per call, one SQL query per read."""

    def __init__(self, client: Requester) -> None:
        self._client = client

    def _ask(self, message: p.Message) -> p.Message:
        try:
            return self._client.request(message)
        except RequestFailed as error:
            raise CheckpointStoreError(str(error)) from error

    def read(self) -> StoredBatches:
        reply = self._ask(p.ReadCheckpointBatches())
        assert isinstance(reply, p.CheckpointBatchesResult)
        return StoredBatches(dict(reply.batches), reply.marker)

    def write_batch(self, number: int, value: Any) -> None:
        # An item's result kept in its JSON form: replayed, it reaches the XCom as it is.
        self._ask(p.WriteCheckpointBatch(number=number, value=xcom_values.encode(value)))

    def write_marker(self, value: Any) -> None:
        self._ask(p.WriteCheckpointMarker(value=value))

    def clear_batches(self) -> None:
        self._ask(p.ClearCheckpointBatches())


@dataclass
class MemoryCheckpointStore:
    """The stub: checkpoints in memory, every call counted (``reads``, ``writes``)."""

    stored: StoredBatches = field(default_factory=StoredBatches)
    reads: int = 0
    writes: int = 0

    def read(self) -> StoredBatches:
        self.reads += 1
        return copy.deepcopy(self.stored)

    def write_batch(self, number: int, value: Any) -> None:
        self.writes += 1
        self.stored.batches[number] = copy.deepcopy(value)

    def write_marker(self, value: Any) -> None:
        self.writes += 1
        self.stored.marker = copy.deepcopy(value)

    def clear_batches(self) -> None:
        self.writes += 1
        self.stored.batches.clear()
