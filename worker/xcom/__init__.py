"""XCom backends: the interface, the SQL default, object storage, and a stub for tests."""

from __future__ import annotations

from worker.xcom.base import Lookups, XComAddress, XComBackend, XComBackendError
from worker.xcom.configured import backend_class, make_backend, runs_in_helper
from worker.xcom.sql import SqlXComBackend
from worker.xcom.stub import StubXComBackend

__all__ = [
    "Lookups",
    "SqlXComBackend",
    "StubXComBackend",
    "XComAddress",
    "XComBackend",
    "XComBackendError",
    "backend_class",
    "make_backend",
    "runs_in_helper",
]
