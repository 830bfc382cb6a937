"""The object-storage backend (fsspec): large values in a bucket, a reference in the row.

A value whose JSON is over ``TRADEWIND_XCOM_OBJECT_THRESHOLD_BYTES`` is written to
``<TRADEWIND_OBJECT_STORAGE_URL>/<dag_id>/<run_id>/<task_id>/<map_index>/<key>`` and the row
holds ``{"__tradewind_xcom_object__": "<that URL>", "bytes": <size>}``; smaller values stay in
the row. Paths are deterministic, so a later try of the same task instance overwrites its own
objects rather than leaving copies. A missing or unreadable object is an error naming its URL:
the URL string is never handed to the task in place of the value.

Credentials: ``TRADEWIND_OBJECT_STORAGE_CONN_ID`` names a Connection (looked up through the
supervisor), read as ``tradewind/storage_options.py`` says (for ``s3://``: the login and password
are the access key and secret; ``endpoint_url``, ``region_name`` in its extra).
Without one, the filesystem's own defaults apply (for S3, the ``AWS_*`` environment variables).
The state store's backend (``worker/state_store/object_storage.py``) is this class with its own
prefix, reference key and words; ``configured_storage`` is the configuration both read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import fsspec

from tradewind.settings import SettingsError, needs_object_storage_url
from tradewind.storage_options import storage_options
from worker.xcom.base import Lookups, XComAddress, XComBackend, XComBackendError

if TYPE_CHECKING:
    from tradewind.settings import Settings

REFERENCE_KEY = "__tradewind_xcom_object__"
# Characters kept as they are in a path segment; anything else (a "/" in a run id) is escaped.
_SAFE = ":+@=,"
_CONCURRENT_FETCHES = 8


def is_reference(row: Any, key: str = REFERENCE_KEY) -> bool:
    return isinstance(row, dict) and isinstance(row.get(key), str)


class ObjectStorageXComBackend(XComBackend):
    """Values over ``threshold_bytes`` go to ``url``; the rest stay in their rows."""

    #: The key of a row that refers to an object (the state store's backend has its own).
    reference_key = REFERENCE_KEY

    def __init__(
        self, url: str, threshold_bytes: int, storage_options: dict[str, Any] | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.threshold_bytes = threshold_bytes
        options = dict(storage_options or {})
        if fsspec.utils.get_protocol(self.url) in ("file", "local"):
            options.setdefault("auto_mkdir", True)
        self.fs, _ = fsspec.core.url_to_fs(self.url, **options)

    @classmethod
    def from_settings(cls, settings: Settings, lookups: Lookups) -> XComBackend:
        url, options = configured_storage(settings, lookups, "TRADEWIND_XCOM_BACKEND")
        return cls(url, settings.xcom_object_threshold_bytes, options)

    def describe(self, where: XComAddress) -> str:
        """What ``where`` names, in an error message."""
        return where.describe()

    def object_url(self, where: XComAddress) -> str:
        parts = (where.dag_id, where.run_id, where.task_id, str(where.map_index), where.key)
        return "/".join([self.url, *(quote(part, safe=_SAFE) for part in parts)])

    def store(self, where: XComAddress, value: Any) -> Any:
        data = json.dumps(value, allow_nan=False, separators=(",", ":")).encode()
        # A value that looks like a reference goes to storage too, so no row is ever ambiguous.
        if len(data) <= self.threshold_bytes and not is_reference(value, self.reference_key):
            return value
        url = self.object_url(where)
        try:
            self.fs.pipe_file(self._path(url), data)
        except OSError as error:
            raise XComBackendError(
                f"could not store {self.describe(where)} ({len(data)} bytes) at {url}: {error}"
            ) from None
        return {self.reference_key: url, "bytes": len(data)}

    def load(self, where: XComAddress, row: Any) -> Any:
        if not is_reference(row, self.reference_key):
            return row
        url = row[self.reference_key]
        return self._decode(where, url, self._fetch(where, url))

    def load_many(self, rows: Sequence[tuple[XComAddress, Any]]) -> list[Any]:
        # Objects are fetched concurrently (latency adds up otherwise); results keep row order.
        with ThreadPoolExecutor(_CONCURRENT_FETCHES) as pool:
            return list(pool.map(lambda pair: self.load(*pair), rows))

    def purge(self, where: XComAddress, row: Any) -> None:
        if not is_reference(row, self.reference_key):
            return
        url = row[self.reference_key]
        try:
            self.fs.rm_file(self._path(url))
        except FileNotFoundError:
            return  # purged before (a clear, then the retry of the same try)
        except OSError as error:
            raise XComBackendError(
                f"could not purge {self.describe(where)} at {url}: {error}"
            ) from None

    def _path(self, url: str) -> str:
        return str(self.fs._strip_protocol(url))

    def _fetch(self, where: XComAddress, url: str) -> bytes:
        try:
            return bytes(self.fs.cat_file(self._path(url)))
        except FileNotFoundError:
            raise XComBackendError(
                f"the object of {self.describe(where)} is missing: {url}"
            ) from None
        except OSError as error:
            raise XComBackendError(
                f"could not read the object of {self.describe(where)} at {url}: {error}"
            ) from None

    def _decode(self, where: XComAddress, url: str, data: bytes) -> Any:
        try:
            return json.loads(data)
        except ValueError as error:
            raise XComBackendError(
                f"the object of {self.describe(where)} at {url} is not JSON: {error}"
            ) from None


def configured_storage(
    settings: Settings, lookups: Lookups, variable: str
) -> tuple[str, dict[str, Any]]:
    """``TRADEWIND_OBJECT_STORAGE_URL`` and the fsspec options its Connection gives, if any.

    ``variable`` names the setting that chose object storage, for the error when no URL is set.
    """
    if not settings.object_storage_url:
        raise SettingsError(needs_object_storage_url(variable))
    options: dict[str, Any] = {}
    if settings.object_storage_conn_id:
        connection = lookups.get_connection(settings.object_storage_conn_id)
        protocol = fsspec.utils.get_protocol(settings.object_storage_url)
        options = storage_options(protocol, connection)
    return settings.object_storage_url, options
