"""``asyncio.run`` for tests, on a thread of its own.

A test of the same xdist worker process may leave an event loop running on the main thread
(Playwright's sync API keeps one there), where ``asyncio.run`` refuses to start another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()
