"""What the app is built with: settings, the store's URL, the token issuer, the sign-in
throttle and the purgers.

``api/`` never imports the worker (DESIGN.md §1). What a clear or a delete needs from it (the
purgers that delete the objects of XComs and state values kept in object storage) is handed in
by whoever builds the app: the CLI's ``tradewind api-server``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from api.security import Tokens, secret_key
from api.throttle import LoginThrottle
from state.engine import Purgers
from tradewind.settings import Settings

__all__ = ["AppContext", "Purgers"]


@dataclass(frozen=True)
class AppContext:
    settings: Settings
    url: str
    tokens: Tokens
    purgers: Purgers
    throttle: LoginThrottle

    @classmethod
    def build(cls, settings: Settings, purgers: Purgers | None = None) -> AppContext:
        lifetime = dt.timedelta(seconds=settings.api_token_lifetime_seconds)
        tokens = Tokens(secret_key(settings), lifetime)
        throttle = LoginThrottle(settings.api_login_max_failures, settings.api_login_window_seconds)
        return cls(settings, settings.sql_url, tokens, purgers or Purgers(), throttle)
