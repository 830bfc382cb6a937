"""The worker: ``celery -A worker worker`` finds the Celery app here as ``worker.app``.

The app is built on first access, so importing the worker's modules (in tests, in the CLI)
reads no settings and touches no broker.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name in ("app", "celery"):
        from worker import celery_app as app_module

        global _APP
        if _APP is None:
            _APP = app_module.create_app()
        return _APP
    raise AttributeError(name)


_APP: Any = None
