"""``FileSensor``: wait for a file, or a folder holding a file, as the standard provider's.

``filepath`` (templated, a glob; ``**`` reaches sub-folders with ``recursive=True``) is
joined to the ``path`` extra of the ``fs_conn_id`` connection (``fs_default`` unless told),
which is looked up at each poke through the supervisor; an absolute ``filepath`` stands alone,
but the connection must exist, as in Airflow.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import Any, ClassVar

from tradewind.connections import Connection
from tradewind.sensor_operator import BaseSensorOperator
from tradewind.triggers.file import FileTrigger


class FileSensor(BaseSensorOperator):
    """``FileSensor(task_id=..., filepath=..., fs_conn_id="fs_default", recursive=False)``;
    with ``deferrable=True`` it pokes once, then waits on a ``FileTrigger`` in the triggerer."""

    can_defer = True

    template_fields: ClassVar[Sequence[str]] = ("filepath", "fs_conn_id")

    def __init__(
        self,
        *,
        filepath: str,
        fs_conn_id: str = "fs_default",
        recursive: bool = False,
        **kwargs: Any,
    ) -> None:
        self.filepath = filepath
        self.fs_conn_id = fs_conn_id
        self.recursive = bool(recursive)
        super().__init__(**kwargs)

    @property
    def path(self) -> str:
        """``filepath`` under the connection's ``path`` extra."""
        base = Connection.get(self.fs_conn_id).extra.get("path", "")
        return os.path.join(str(base), self.filepath)

    def poke(self, context: dict[str, Any]) -> bool:
        path = self.path
        print(f"poking for file {path}", flush=True)
        for found in glob.glob(path, recursive=self.recursive):
            if os.path.isfile(found):
                print(f"found file {found}", flush=True)
                return True
            for _folder, _subfolders, files in os.walk(found):
                if files:
                    print(f"found files in {found}", flush=True)
                    return True
        return False

    def execute(self, context: dict[str, Any]) -> Any:
        if not self.deferrable:
            return super().execute(context)
        if self.poke(context):
            return None
        print(f"deferring until a file matches {self.path}", flush=True)
        self.defer(
            trigger=FileTrigger(
                self.path, recursive=self.recursive, poke_interval=self.poke_interval
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: dict[str, Any], event: Any = None) -> None:
        """Where the deferred sensor resumes: a file is there."""
        print(f"resumed: file found ({event})", flush=True)
