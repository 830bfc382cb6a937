"""The web UI's pages: one module per page group, their routers gathered in ``router``.

Each module's routes take ``DbSession``, ``PageUser`` / ``require_on_page`` and ``FormPost``
from ``api.deps`` and ``api.csrf``, call ``state/`` for every query, and ``render`` a template
of ``api/templates/pages``; a live part of a page is a partial of its own, served at a path
of its own, which ``static/tradewind.js`` polls (``data-refresh``).
"""

from __future__ import annotations

from fastapi import APIRouter

from api.pages import (
    backfills,
    browse,
    catalog,
    dag,
    dags,
    events,
    gantt,
    hitl,
    home,
    recover,
    resources,
    runs,
    task_instances,
    task_panel,
    users,
)

router = APIRouter(include_in_schema=False)
_PAGES = (
    home,
    dags,
    dag,
    gantt,
    runs,
    task_instances,
    task_panel,
    browse,
    catalog,
    backfills,
    resources,
)
for _module in (*_PAGES, hitl, recover, users, events):
    router.include_router(_module.router)

__all__ = ["router"]
