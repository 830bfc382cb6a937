"""The XCom backend interface: where a task's XCom values live, and how a row refers to them.

A backend turns a value into the row the SQL store keeps (``store``), a row back into its value
(``load``, ``load_many``), and forgets what a row refers to when the row goes (``purge``). Rows
are JSON. The SQL backend keeps the value itself in the row; another backend may keep a
reference to a value it holds elsewhere.

Where a backend runs: a Python task runs it in its own process and sends its supervisor only the
row; for a runtime task, the supervisor runs a non-default backend in a helper process
(``worker/helper/client.py``). The supervisor itself never runs one that does I/O: it forks
task processes, and a backend's cached clients and threads must not be inherited by them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tradewind.connections import Connection
    from tradewind.settings import Settings


class XComBackendError(RuntimeError):
    """A backend call failed: a value it cannot store, a stored object missing or unreadable."""


@dataclass(frozen=True)
class XComAddress:
    """Which XCom: one key of one task instance (one map index of one task of one run)."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    key: str

    def describe(self, noun: str = "XCom") -> str:
        index = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{noun} {self.key!r} of {self.dag_id}/{self.run_id}/{self.task_id}{index}"


class Lookups(Protocol):
    """Connection and Variable look-ups, which always go through the supervisor from a task."""

    def get_connection(self, conn_id: str) -> Connection: ...

    def get_variable(self, key: str) -> str | None: ...


class XComBackend(ABC):
    """Subclass this (and name it in ``TRADEWIND_XCOM_BACKEND``) to keep XComs elsewhere."""

    @classmethod
    def from_settings(cls, settings: Settings, lookups: Lookups) -> XComBackend:
        """The backend as configured; ``lookups`` finds Connections and Variables."""
        return cls()

    @abstractmethod
    def store(self, where: XComAddress, value: Any) -> Any:
        """Keep ``value`` and return the JSON row that refers to it (raise if it cannot)."""

    @abstractmethod
    def load(self, where: XComAddress, row: Any) -> Any:
        """The value ``row`` refers to (raise ``XComBackendError`` if it is gone)."""

    def load_many(self, rows: Sequence[tuple[XComAddress, Any]]) -> list[Any]:
        """The values of ``rows``, in their order; a backend may fetch them concurrently."""
        return [self.load(where, row) for where, row in rows]

    def purge(self, where: XComAddress, row: Any) -> None:
        """Forget what ``row`` refers to; its row is being deleted. Purging twice is harmless."""
        return None
