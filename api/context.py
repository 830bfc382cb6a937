"""What the app is built with: settings, the store's URL, the token issuer and the purgers.

``api/`` never imports the worker (DESIGN.md §1). What a clear or a delete needs from it (the
purgers that delete the objects of XComs and state values kept in object storage) is handed in
by whoever builds the app: the CLI's ``tradewind api-server``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from api.security import Tokens, secret_key
from state.engine import Purgers
from tradewind.settings import Settings

__all__ = ["AppContext", "Purgers"]


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
