"""The mapping rules the worker applies: cross products, dicts, batches, fingerprints."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest

from tradewind.state_store import MAX_KEY_LENGTH, RESERVED_PREFIX, StateValueError, TaskStateStore
from worker.task_runner.mapping import (
    all_arguments,
    arguments_at,
    batch_indexes,
    fingerprint,
    items_of,
    merge_batches,
    shared_digest,
)


def test_several_lists_give_their_cross_product_the_last_varying_fastest() -> None:
    lists = {"x": [1, 2], "y": ["a", "b", "c"]}

    items = list(all_arguments(lists))

    assert items == [{"x": x, "y": y} for x, y in itertools.product([1, 2], ["a", "b", "c"])]
    assert [arguments_at(lists, n) for n in range(6)] == items
    with pytest.raises(IndexError):
        arguments_at(lists, 6)


def test_a_dict_maps_as_its_key_value_pairs() -> None:
    assert items_of("d", {"a": 1, "b": 2}) == [("a", 1), ("b", 2)]
    with pytest.raises(TypeError, match="mapped argument 'd' is a str"):
        items_of("d", "abc")


def test_batches_deal_items_round_robin_and_merge_back_in_order() -> None:
    dealt = [list(batch_indexes(10, 4, map_index)) for map_index in range(4)]

    assert dealt == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    assert merge_batches(dealt) == list(range(10))
    assert [list(batch_indexes(2, 4, m)) for m in range(2)] == [[0], [1]]  # fewer items than k


def test_a_fingerprint_follows_the_item_and_the_shared_arguments() -> None:
    digest = shared_digest({"y": 1})

    assert fingerprint(digest, {"x": 1}) == fingerprint(digest, {"x": 1})
    assert fingerprint(digest, {"x": 1}) != fingerprint(digest, {"x": 2})
    assert fingerprint(digest, {"x": 1}) != fingerprint(shared_digest({"y": 2}), {"x": 1})


def test_checkpoint_keys_are_reserved_with_the_prefix_the_store_uses() -> None:
    from state.records.checkpoints import CHECKPOINT_PREFIX

    assert RESERVED_PREFIX == CHECKPOINT_PREFIX


class RecordingClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def set_state(self, key: str, value: Any, expires_at: dt.datetime | None) -> None:
        self.calls.append(("set", key))

    def clear_state(self, key_suffix: str = "") -> None:
        self.calls.append(("clear", key_suffix))


def test_an_items_store_suffixes_its_keys_and_clears_only_them() -> None:
    client = RecordingClient()
    store = TaskStateStore(client, key_suffix="#3.abc")  # type: ignore[arg-type]

    store.set("cursor", 1)
    store.clear()

    assert client.calls == [("set", "cursor#3.abc"), ("clear", "#3.abc")]


def test_the_key_limit_counts_the_items_suffix() -> None:
    store = TaskStateStore(RecordingClient(), key_suffix="#3.abc")  # type: ignore[arg-type]

    with pytest.raises(StateValueError, match="at most 512"):
        store.set("k" * (MAX_KEY_LENGTH - 2), 1)


def test_checkpoint_keys_are_reserved() -> None:
    store = TaskStateStore(RecordingClient())  # type: ignore[arg-type]

    with pytest.raises(StateValueError, match="reserved"):
        store.set("_iterable_batch_0", 1)
