"""What the state store accepts: keys, JSON values, and retention."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest

from tradewind import NEVER_EXPIRE
from tradewind.state_store import (
    MAX_KEY_LENGTH,
    StateValueError,
    check_key,
    encode_value,
    expires_at,
)


@pytest.mark.parametrize(
    "value",
    [0, 1.5, "text", "", True, False, [], {}, [1, "a", None], {"nested": {"list": [1, 2]}}],
)
def test_encode_value_round_trips_json(value: object) -> None:
    assert json.loads(encode_value("k", value)) == value


def test_encode_value_is_compact() -> None:
    assert encode_value("k", {"a": [1, 2]}) == '{"a":[1,2]}'


def test_encode_value_refuses_none() -> None:
    with pytest.raises(StateValueError, match=r"'k' is None: use delete\(\)"):
        encode_value("k", None)


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, [1.0, math.nan], {"deep": {"x": math.inf}}]
)
def test_encode_value_refuses_nan_and_infinity(value: object) -> None:
    with pytest.raises(StateValueError, match="NaN or infinity"):
        encode_value("k", value)


@pytest.mark.parametrize(
    "value", [object(), {1, 2}, b"bytes", dt.datetime(2024, 1, 1), {"when": dt.date(2024, 1, 1)}]
)
def test_encode_value_refuses_non_json_objects(value: object) -> None:
    with pytest.raises(StateValueError, match="'k' is not JSON"):
        encode_value("k", value)


def test_encode_value_refuses_a_circular_value_with_its_own_reason() -> None:
    looped: list[object] = []
    looped.append(looped)

    with pytest.raises(StateValueError, match="'k' is not JSON: Circular reference") as caught:
        encode_value("k", looped)

    assert "NaN" not in str(caught.value)


@pytest.mark.parametrize("key", ["k", "a" * MAX_KEY_LENGTH, "with spaces/and:colons", "ключ"])
def test_check_key_accepts(key: str) -> None:
    check_key(key)


def test_check_key_refuses_empty() -> None:
    with pytest.raises(StateValueError, match="non-empty strings"):
        check_key("")


def test_check_key_refuses_non_strings() -> None:
    with pytest.raises(StateValueError, match="non-empty strings"):
        check_key(42)  # type: ignore[arg-type]


def test_check_key_refuses_more_than_512_characters() -> None:
    assert MAX_KEY_LENGTH == 512

    with pytest.raises(StateValueError, match="513 characters: at most 512"):
        check_key("a" * 513)


def test_never_expire_and_none_have_no_expiry() -> None:
    assert expires_at(NEVER_EXPIRE) is None
    assert expires_at(None) is None
    assert repr(NEVER_EXPIRE) == "NEVER_EXPIRE"


def test_timedelta_retention_gives_a_future_aware_datetime() -> None:
    before = dt.datetime.now(dt.UTC)

    when = expires_at(dt.timedelta(hours=1))

    after = dt.datetime.now(dt.UTC)
    assert when is not None
    assert when.tzinfo is not None
    assert when.utcoffset() == dt.timedelta(0)
    assert before + dt.timedelta(hours=1) <= when <= after + dt.timedelta(hours=1)


@pytest.mark.parametrize("retention", [3600, "1h", dt.datetime(2030, 1, 1)])
def test_other_retentions_are_refused(retention: object) -> None:
    with pytest.raises(StateValueError, match="retention must be a timedelta or NEVER_EXPIRE"):
        expires_at(retention)  # type: ignore[arg-type]
