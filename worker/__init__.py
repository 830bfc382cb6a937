"""The worker: ``celery -A worker worker`` finds the Celery app here as ``worker.app``.

The app is built on first access, so importing the worker's modules (in tests, in the CLI)
reads no settings and touches no broker.

Grouped by the process each module runs in, bottom to top:

- ``wire/`` (framing and one module per channel), ``process.py`` (starting and ending a task
  process), ``slots.py`` and ``dags.py`` (a task found in the worker's DAG files): what every
  process of the worker shares;
- ``task_runner/``: what a task process runs; it never imports ``state`` or SQLAlchemy;
- ``fork_server/``: the fork server's own process (``main``), the supervisor's side of it
  (``client``) and warm task processes (``warm``);
- ``helper/``: the backend helper process (``main``) and the supervisor's side (``client``);
- ``xcom/`` and ``state_store/``: the backends, which a task process or the helper runs, and how
  the supervisor serves their rows;
- ``supervisor/``: one message from claim to record (``execute``; the claim and the record are
  the store's, ``state.engine``), the loop servicing a task process, the request handlers;
- ``celery_app.py`` and ``threads.py``: the Celery app and its pool, on top.

docs/code-map.md draws the whole house.
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
