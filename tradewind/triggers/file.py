"""``FileTrigger`` and ``FileDeleteTrigger``: wait for a file (the standard provider's).

``FileTrigger`` fires once a path matching ``filepath`` (a glob) exists; ``FileDeleteTrigger``
fires when ``filepath`` exists and deletes it, so an ``AssetWatcher`` on it records one asset
event per file dropped there. Both look every ``poke_interval`` seconds, checking the disk on a
thread so the loop is never held by a slow file system.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
from collections.abc import AsyncIterator
from typing import Any

from tradewind.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent, classpath_of


def _matches(filepath: str, recursive: bool) -> list[str]:
    return [path for path in glob.glob(filepath, recursive=recursive) if os.path.isfile(path)]


class FileTrigger(BaseTrigger):
    """Fire once a file matching ``filepath`` exists; the payload is True."""

    def __init__(
        self, filepath: str, *, recursive: bool = False, poke_interval: float = 5.0, **kwargs: Any
    ) -> None:
        super().__init__()
        if not isinstance(filepath, str) or not filepath:
            raise ValueError(f"filepath must be a non-empty path, got {filepath!r}")
        self.filepath = filepath
        self.recursive = bool(recursive)
        self.poke_interval = float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {
            "filepath": self.filepath,
            "recursive": self.recursive,
            "poke_interval": self.poke_interval,
        }
        return classpath_of(FileTrigger), kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            found = await asyncio.to_thread(_matches, self.filepath, self.recursive)
            if found:
                yield TriggerEvent(True)
                return
            await asyncio.sleep(self.poke_interval)


class FileDeleteTrigger(BaseEventTrigger):
    """Fire when ``filepath`` exists, deleting it; the payload names the file. Run by an
    ``AssetWatcher``, it fires once per file dropped at that path."""

    def __init__(self, filepath: str, *, poke_interval: float = 5.0, **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(filepath, str) or not filepath:
            raise ValueError(f"filepath must be a non-empty path, got {filepath!r}")
        self.filepath = filepath
        self.poke_interval = float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {"filepath": self.filepath, "poke_interval": self.poke_interval}
        return classpath_of(FileDeleteTrigger), kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            if await asyncio.to_thread(os.path.isfile, self.filepath):
                await asyncio.to_thread(_remove, self.filepath)
                yield TriggerEvent({"status": "success", "filepath": self.filepath})
            await asyncio.sleep(self.poke_interval)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


class DirectoryFileDeleteTrigger(BaseEventTrigger):
    """Fire when ``filename`` appears in ``directory``, deleting it; as ``FileDeleteTrigger``
    on ``directory/filename`` (Airflow shares one directory scan between such watchers; here
    each looks on its own, which reads the same)."""

    def __init__(
        self, directory: str, filename: str, *, poke_interval: float = 5.0, **kwargs: Any
    ) -> None:
        super().__init__()
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"directory must be a non-empty path, got {directory!r}")
        if not isinstance(filename, str) or not filename or os.sep in filename:
            raise ValueError(f"filename must be a file's name, got {filename!r}")
        self.directory = directory
        self.filename = filename
        self.poke_interval = float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {
            "directory": self.directory,
            "filename": self.filename,
            "poke_interval": self.poke_interval,
        }
        return classpath_of(DirectoryFileDeleteTrigger), kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        path = os.path.join(self.directory, self.filename)
        while True:
            if await asyncio.to_thread(os.path.isfile, path):
                await asyncio.to_thread(_remove, path)
                yield TriggerEvent({"status": "success", "filepath": path})
            await asyncio.sleep(self.poke_interval)
