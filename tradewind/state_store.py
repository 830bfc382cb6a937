"""``task_state_store``: a task instance's own key → JSON value store that outlives its tries.

Values go through the supervisor to the configured backend; retries see what earlier tries set,
a clear discards it (unless asked to keep it).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any, Final

from tradewind.context import SupervisorClient

MAX_KEY_LENGTH: Final = 512
#: Keys of iterable tasks' checkpoints (``state/records/checkpoints.py``); a user's key may not
# start so.
RESERVED_PREFIX: Final = "_iterable_"


class _NeverExpire:
    def __repr__(self) -> str:
        return "NEVER_EXPIRE"


#: Pass as ``retention`` to keep a value until it is deleted or its task instance cleared.
NEVER_EXPIRE: Final = _NeverExpire()


class StateValueError(ValueError):
    """A key or value the state store does not accept."""


def check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise StateValueError(f"state store keys are non-empty strings, got {key!r}")
    if len(key) > MAX_KEY_LENGTH:
        raise StateValueError(f"state store key of {len(key)} characters: at most {MAX_KEY_LENGTH}")


def encode_value(key: str, value: Any) -> str:
    """The JSON text of ``value``; ``None``, NaN, infinities and non-JSON types are refused."""
    if value is None:
        raise StateValueError(f"state value for {key!r} is None: use delete() to remove a key")
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except ValueError as error:
        # json reports a value that contains itself with a ValueError too, not only NaN.
        if "Circular reference" in str(error):
            raise StateValueError(f"state value for {key!r} is not JSON: {error}") from None
        raise StateValueError(f"state value for {key!r} contains NaN or infinity") from None
    except TypeError as error:
        raise StateValueError(f"state value for {key!r} is not JSON: {error}") from None


def expires_at(retention: dt.timedelta | _NeverExpire | None) -> dt.datetime | None:
    if retention is None or retention is NEVER_EXPIRE:
        return None
    if isinstance(retention, dt.timedelta):
        return dt.datetime.now(dt.UTC) + retention
    raise StateValueError(f"retention must be a timedelta or NEVER_EXPIRE, got {retention!r}")


class TaskStateStore:
    """The state store of the running task instance.

    Reached as ``get_current_context()["task_state_store"]``.
    """

    def __init__(self, client: SupervisorClient, key_suffix: str = "") -> None:
        self._client = client
        self._suffix = key_suffix

    def _key(self, key: str) -> str:
        check_key(key)
        if key.startswith(RESERVED_PREFIX):
            raise StateValueError(f"keys starting with {RESERVED_PREFIX!r} are reserved")
        # An item's keys carry its suffix: the limit applies to the key as stored.
        check_key(key + self._suffix)
        return key + self._suffix

    def get(self, key: str, default: Any = None) -> Any:
        value = self._client.get_state(self._key(key))
        return default if value is None else value

    def set(
        self, key: str, value: Any, retention: dt.timedelta | _NeverExpire | None = None
    ) -> None:
        full = self._key(key)
        encode_value(full, value)
        self._client.set_state(full, value, expires_at(retention))

    def delete(self, key: str) -> None:
        self._client.delete_state(self._key(key))

    def clear(self) -> None:
        """Delete this store's keys: an item of an iterable task clears only its own."""
        self._client.clear_state(self._suffix)

    async def aget(self, key: str, default: Any = None) -> Any:
        return await asyncio.to_thread(self.get, key, default)

    async def aset(
        self, key: str, value: Any, retention: dt.timedelta | _NeverExpire | None = None
    ) -> None:
        await asyncio.to_thread(self.set, key, value, retention)
