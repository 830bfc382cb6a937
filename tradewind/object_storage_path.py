"""``ObjectStoragePath``: a pathlib-style path on any fsspec filesystem, as Airflow's.

Built on universal-pathlib (``ProxyUPath`` wraps the ``UPath`` of the URL). The connection of
``s3://aws_default@bucket/key`` (or ``conn_id=``) gives the filesystem its credentials
(``tradewind/storage_options.py``). A DAG file makes its paths at parse time, where no task runs
and no connection can be read, so the connection is looked up (through the supervisor) on the
first use that reaches the storage, once for a path and every path derived from it. Paths
without a connection use fsspec's defaults (for S3, the ``AWS_*`` environment variables).

A path returned by a task crosses XComs as ``to_xcom()`` says (``tradewind/xcom_values.py``
encodes and decodes it): its URL, its connection id and its storage options, never the
connection's secrets.
"""

from __future__ import annotations

import shutil
import stat
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import fsspec
from fsspec import AbstractFileSystem
from upath.extensions import ProxyUPath

from tradewind.connections import Connection
from tradewind.context import get_current_context
from tradewind.storage_options import storage_options

#: The ``__tradewind_type__`` of a path in an XCom, and the version of its fields.
XCOM_TYPE = "ObjectStoragePath"
XCOM_VERSION = 1
_LOCAL = ("", "file", "local")


class ConnectedFileSystem:
    """Stands for the filesystem of a connection until first used; then it is that filesystem.

    Attribute look-ups go to the real filesystem, built on the first one: the connection is
    read then, inside the running task.
    """

    def __init__(self, protocol: str, conn_id: str, options: Mapping[str, Any]) -> None:
        self.protocol_name = protocol
        self.conn_id = conn_id
        self.options = dict(options)
        self._fs: AbstractFileSystem | None = None

    def resolve(self) -> AbstractFileSystem:
        if self._fs is None:
            try:
                get_current_context()
            except RuntimeError:  # at parse time, or in a script: no supervisor to ask
                raise RuntimeError(
                    f"ObjectStoragePath: the connection {self.conn_id!r} is read inside a "
                    "running task only, through its supervisor"
                ) from None
            connection = Connection.get(self.conn_id)
            given = storage_options(self.protocol_name, connection)
            self._fs = fsspec.filesystem(self.protocol_name, **{**given, **self.options})
        return self._fs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)


class StatResult(dict[str, Any]):
    """What ``stat()`` returns: the filesystem's info, with ``os.stat_result``'s main fields."""

    @property
    def st_size(self) -> int:
        return int(self.get("size") or 0)

    @property
    def st_mtime(self) -> float:
        for key in ("mtime", "LastModified", "last_modified", "created"):
            value = self.get(key)
            if value is not None:
                return float(value.timestamp() if hasattr(value, "timestamp") else value)
        return 0.0

    @property
    def st_mode(self) -> int:
        if "mode" in self:
            return int(self["mode"])
        return stat.S_IFDIR if self.get("type") == "directory" else stat.S_IFREG


class ObjectStoragePath(ProxyUPath):
    """A path in object storage: ``ObjectStoragePath("s3://conn_id@bucket/key")``."""

    __slots__ = ()

    def __init__(
        self,
        *args: Any,
        protocol: str | None = None,
        conn_id: str | None = None,
        **options: Any,
    ) -> None:
        if args and isinstance(args[0], ObjectStoragePath):
            first = args[0]
            conn_id = conn_id or first.conn_id
            options = {**first.storage_options, **options}
            args = (first.__wrapped__, *args[1:])
        elif args:
            url = urlsplit(str(args[0]))
            userinfo, at, host = url.netloc.rpartition("@")
            if at:  # s3://conn_id@bucket/key: the connection, not a part of the path
                conn_id = conn_id or userinfo or None
                args = (url._replace(netloc=host).geturl(), *args[1:])
        super().__init__(*args, protocol=protocol, **options)
        if conn_id:
            connected = ConnectedFileSystem(self.protocol or "file", conn_id, options)
            self.__wrapped__._fs_cached = connected

    # --- what Airflow's ObjectStoragePath adds to a path ---
    @property
    def conn_id(self) -> str | None:
        """The connection whose credentials the filesystem uses (kept by derived paths)."""
        fs = getattr(self.__wrapped__, "_fs_cached", None)
        return fs.conn_id if isinstance(fs, ConnectedFileSystem) else None

    @property
    def fs(self) -> AbstractFileSystem:
        fs = self.__wrapped__.fs
        return fs.resolve() if isinstance(fs, ConnectedFileSystem) else fs

    @property
    def bucket(self) -> str:
        """The bucket (or container) of the URL; empty for a local path."""
        return self._url.netloc if self._url else ""

    @property
    def container(self) -> str:
        return self.bucket

    @property
    def key(self) -> str:
        """The path inside the bucket, with no leading ``/`` (a trailing one is kept)."""
        return self._url.path.lstrip("/") if self._url else ""

    @property
    def namespace(self) -> str:
        return f"{self.protocol}://{self.bucket}" if self.bucket else self.protocol

    def samestore(self, other: Any) -> bool:
        """``other`` is a path of the same filesystem and connection."""
        return (
            isinstance(other, ObjectStoragePath)
            and self.protocol == other.protocol
            and self.conn_id == other.conn_id
        )

    def stat(self, *, follow_symlinks: bool = True) -> StatResult:  # type: ignore[override]
        """The object's info (size, type, times...): ``FileNotFoundError`` when missing."""
        info = StatResult(self.fs.info(self.path))
        info.update(protocol=self.protocol, conn_id=self.conn_id)
        return info

    def size(self) -> int:
        return int(self.fs.size(self.path))

    def checksum(self) -> int:
        return int(self.fs.checksum(self.path))

    def copy(  # type: ignore[override]
        self, target: str | ObjectStoragePath, recursive: bool = False, **kwargs: Any
    ) -> ObjectStoragePath:
        """Copy to ``target`` (within a store, or between two); the copy's path.

        Into a directory (an existing one, or a target ending with ``/``) a file keeps its
        name; a directory needs ``recursive=True`` and keeps the paths below it.
        """
        destination = self._destination(target)
        if self.fs.isdir(self.path):
            if not recursive:
                raise IsADirectoryError(f"{self} is a directory: copy it with recursive=True")
            for found in self.fs.find(self.path):
                below = found[len(self.path.rstrip("/")) :].lstrip("/")
                self.with_segments(self.fs.unstrip_protocol(found))._copy_file(
                    destination / below, **kwargs
                )
            return destination
        self._copy_file(destination, **kwargs)
        return destination

    def move(  # type: ignore[override]
        self, target: str | ObjectStoragePath, recursive: bool = False, **kwargs: Any
    ) -> ObjectStoragePath:
        """Move to ``target``: a copy as ``copy`` makes it, then this path is deleted."""
        destination = self.copy(target, recursive=recursive, **kwargs)
        self.fs.rm(self.path, recursive=recursive)
        return destination

    def _destination(self, target: str | ObjectStoragePath) -> ObjectStoragePath:
        path = _as_path(target)
        # A bucket's root, or a URL ending with "/", names a directory even before it exists.
        if str(target).endswith("/") or not path.key or path.is_dir():
            return path / self.name
        return path

    def _copy_file(self, destination: ObjectStoragePath, **kwargs: Any) -> None:
        if not self.fs.isfile(self.path):
            raise FileNotFoundError(f"{self} does not exist: nothing to copy")
        if self.samestore(destination):
            self.fs.copy(self.path, destination.path, **kwargs)
            return
        if destination.protocol in _LOCAL:
            destination.parent.mkdir(parents=True, exist_ok=True)
        with self.open("rb") as source, destination.open("wb") as sink:
            shutil.copyfileobj(source, sink)

    # --- across XComs ---
    def to_xcom(self) -> dict[str, Any]:
        """The path as an XCom holds it: URL, connection id, storage options."""
        return {
            "__tradewind_type__": XCOM_TYPE,
            "version": XCOM_VERSION,
            "url": self.__wrapped__.__str__(),
            "conn_id": self.conn_id,
            "storage_options": dict(self.storage_options),
        }

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> ObjectStoragePath:
        if data.get("version") != XCOM_VERSION:
            raise ValueError(
                f"an ObjectStoragePath XCom of version {data.get('version')!r}: this Tradewind "
                f"reads version {XCOM_VERSION}"
            )
        options = dict(data.get("storage_options") or {})
        return cls(data["url"], conn_id=data.get("conn_id"), **options)

    # --- a path shows its connection, so that str() makes the same path again ---
    def __str__(self) -> str:
        text = self.__wrapped__.__str__()
        if self.conn_id and "://" in text:
            scheme, rest = text.split("://", 1)
            return f"{scheme}://{self.conn_id}@{rest}"
        return text

    def __repr__(self) -> str:
        return f"ObjectStoragePath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return self.samestore(other) and str(self) == str(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(str(self))


def _as_path(target: str | ObjectStoragePath) -> ObjectStoragePath:
    return target if isinstance(target, ObjectStoragePath) else ObjectStoragePath(target)
