"""Fixtures of the worker tests."""

from __future__ import annotations

from tests.worker.xcom_support import moto

__all__ = ["moto"]
