"""The triggerer (DESIGN.md §12): one asyncio loop running deferred tries' triggers and asset
watchers' triggers, many thousands at once. ``tradewind triggerer`` runs it; docs/triggerer.md
says how it shares the work, fences a lost triggerer's events and names a blocking trigger.

It imports the store (``state/``) and the authoring API (``tradewind/``), never the worker or
the scheduler.
"""

from __future__ import annotations

from triggerer.loop import Triggerer

__all__ = ["Triggerer"]
