"""The security headers every response carries, the API's and the pages', a refusal's too.

A pure ASGI middleware, the outermost one, so a 413 or a 400 answered before any route (by
``api.limits`` or ``api.bodies``) carries them as well. What each header is for:

- ``Content-Security-Policy``: scripts only from this server's files, never inline (the pages
  keep theirs in ``api/static``; an injected ``<script>`` or ``onclick`` does not run), no
  plugin, no ``<base>``, forms posted only here, and ``frame-ancestors 'none'``: no other site
  frames a page to trick a click. Inline *styles* stay allowed: two templates size bars and
  indents with a ``style`` attribute, and a style runs no code.
- ``X-Frame-Options: DENY``: the same refusal of frames, for browsers before CSP level 2.
- ``X-Content-Type-Options: nosniff``: a log or a JSON answer is never read as a script.
- ``Referrer-Policy: same-origin``: a run's or a task's URL is not sent to other sites.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

_RAW = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
_NAMES = {name for name, _ in _RAW}


class SecurityHeaders:
    """Sets ``SECURITY_HEADERS`` on every HTTP response, replacing any of the same name."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": kept + _RAW}
            await send(message)

        await self.app(scope, receive, send_with_headers)
