"""The worker: ``celery -A worker worker`` finds the Celery app here as ``worker.app``.

The app is built on first access, so importing the worker's modules (in tests, in the CLI)
reads no settings and touches no broker.

Two sides, kept apart by the layout. The modules here run where the supervisors run (the
Celery worker's own process on the threads pool, its default; each pool process on prefork): the
supervisor and its request handlers (a try's claim and record are the store's:
``state.engine.try_life``), the fork server, the backend helper process, how XComs and state values
are served. ``task_runner/`` is what a task process runs; it never imports ``state`` or SQLAlchemy.
Between them: ``wire/``, the messages and frames every process speaks (one module per channel),
and the backends (``xcom/``, ``state_store/object_storage.py``), which a task process or the
backend helper runs and the supervisor never does.
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
