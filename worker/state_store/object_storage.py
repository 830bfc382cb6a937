"""The state store's object-storage backend: the values the supervisor sends it, in a bucket.

With ``TRADEWIND_STATE_STORE_BACKEND=object_storage``, the supervisor sends a state value here
when its JSON is over ``TRADEWIND_STATE_STORE_MAX_VALUE_BYTES`` (or over what the database takes,
or when it looks like a reference); every value it is sent is written to
``<TRADEWIND_OBJECT_STORAGE_URL>/state/<dag_id>/<run_id>/<task_id>/<map_index>/<key>``, and the
row holds ``{"__tradewind_state_object__": "<that URL>", "bytes": <size>}``.

It is the XCom object-storage backend with its own prefix, reference key and words: the same
paths (deterministic, so a retry overwrites its own objects), the same credentials
(``TRADEWIND_OBJECT_STORAGE_CONN_ID``), and the same rule that a missing object is an error
naming its URL, never the URL in place of the value. It runs in the helper process
(``worker/helper/main.py``) and, for ``tradewind tasks clear``, in the clearing process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.core import STATE_OBJECT_KEY
from worker.xcom.base import Lookups, XComAddress, XComBackend
from worker.xcom.object_storage import ObjectStorageXComBackend, configured_storage

if TYPE_CHECKING:
    from tradewind.settings import Settings

#: Where state objects go under ``TRADEWIND_OBJECT_STORAGE_URL`` (XComs go straight under it).
PREFIX = "state"


class ObjectStorageStateBackend(ObjectStorageXComBackend):
    """Writes every value it is given under ``<url>/state``: the supervisor chose which."""

    reference_key = STATE_OBJECT_KEY

    @classmethod
    def from_settings(cls, settings: Settings, lookups: Lookups) -> XComBackend:
        url, options = configured_storage(settings, lookups, "TRADEWIND_STATE_STORE_BACKEND")
        # Threshold 0: the supervisor sends only what goes to storage (serving.py decides).
        return cls(f"{url.rstrip('/')}/{PREFIX}", 0, options)

    def describe(self, where: XComAddress) -> str:
        return where.describe("state value")
