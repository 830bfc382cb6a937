"""The one rule of every limit (pools, ``max_active_tasks``), on numbers and on SQL columns alike.

Its own module, beneath both users: a pass's count of room (``state.engine.pools``) and the
statement that hands an ended try's slot over (``state.core.dialects``), so the two can never
disagree.
"""

from __future__ import annotations

from typing import Any, overload

from sqlalchemy import ColumnElement


@overload
def has_room(active: int, limit: int, ending: int = 0) -> bool: ...


@overload
def has_room(
    active: ColumnElement[Any], limit: ColumnElement[Any], ending: int = 0
) -> ColumnElement[bool]: ...


def has_room(active: Any, limit: Any, ending: int = 0) -> Any:
    """One more may start while those active, less the ``ending`` ones whose slots are being
    handed over, are fewer than the limit.

    The same expression on numbers (a pass's ``Room``) and on SQL columns (the statement that
    hands an ended try's slot over), so the two can never disagree.
    """
    return active - ending < limit
