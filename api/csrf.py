"""CSRF protection of the pages' forms: a token per session, checked on every form post.

The synchronizer-token pattern on Starlette's signed session cookie: the token is a random
value kept in the session (which only this server can sign), rendered into each form as a
hidden ``csrf_token`` field, and compared in constant time when the form comes back. A page
on another site can make a browser post a form here, with the cookie, but cannot read the
token to put in it. The API's own writes need a bearer token, which a browser never adds
by itself, so they need no CSRF token.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Form, Header, HTTPException, Request, status

SESSION_KEY = "csrf"
FIELD = "csrf_token"
HEADER = "X-CSRF-Token"


def csrf_token(request: Request) -> str:
    """This session's token, made on first use (templates call it for each form)."""
    token = request.session.get(SESSION_KEY)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session[SESSION_KEY] = token
    return token


def check_csrf(
    request: Request,
    csrf_token: Annotated[str | None, Form(alias=FIELD)] = None,
    header_token: Annotated[str | None, Header(alias=HEADER)] = None,
) -> None:
    """Refuse (403) a post whose CSRF token, in the form or the ``X-CSRF-Token`` header (a
    page's script posting without a form), is not this session's."""
    csrf_token = csrf_token or header_token
    expected = request.session.get(SESSION_KEY)
    if not csrf_token or not isinstance(expected, str):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "the form has no CSRF token: reload it")
    if not secrets.compare_digest(csrf_token, expected):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "the form's CSRF token is wrong: reload it")


CsrfChecked = Depends(check_csrf)
FormPost = Annotated[None, CsrfChecked]
