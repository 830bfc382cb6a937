"""What the app is built with: settings, the store's URL, the token issuer and the purgers.

``api/`` never imports the worker (DESIGN.md §1). What a clear or a delete needs from it (the
purgers that delete the objects of XComs and state values kept in object storage) is handed in
by whoever builds the app: the CLI's ``tradewind api-server``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from api.security import Tokens, secret_key
from state.core import TaskStateValue, XCom
from tradewind.settings import Settings


@dataclass(frozen=True)
class Purgers:
    """Deletes the objects of XCom rows and state rows about to be deleted (None: none kept)."""

    xcoms: Callable[[Sequence[XCom]], None] | None = None
    states: Callable[[Sequence[TaskStateValue]], None] | None = None


@dataclass(frozen=True)
class AppContext:
    settings: Settings
    url: str
    tokens: Tokens
    purgers: Purgers

    @classmethod
    def build(cls, settings: Settings, purgers: Purgers | None = None) -> AppContext:
        lifetime = dt.timedelta(seconds=settings.api_token_lifetime_seconds)
        tokens = Tokens(secret_key(settings), lifetime)
        return cls(settings, settings.sql_url, tokens, purgers or Purgers())
