"""Request bodies checked before any route parses them: 400 for what no JSON parser should see.

Two shapes of a body took the server down with a 500 where a route parsed it: JSON nested
100,000 deep (the parser's recursion ran out, on the anonymous ``/auth/token`` too) and a lone
UTF-16 surrogate (``"\\ud800"``: it parses, then nothing can encode it, not the store, not the
answer). Every body that is not a form is checked here, once, in linear time: it must be
UTF-8, nest at most ``MAX_JSON_DEPTH`` levels and escape no unpaired surrogate. The body, at
most ``TRADEWIND_API_MAX_BODY_BYTES`` (``api.limits`` bounds it first), is then handed on whole.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Deeper than any conf, params or variable a person writes; far inside the parser's recursion.
MAX_JSON_DEPTH = 64
_FORMS = (b"application/x-www-form-urlencoded", b"multipart/form-data")
# A string, closed or running to the end: every start matches, so the scan stays linear.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.|\\\Z)*+(?:"|\Z)', re.DOTALL)
# A \u escape not itself escaped (an even run of backslashes before it): a surrogate pair
# whole, or (group 1) a surrogate alone.
_SURROGATE = re.compile(
    rb"(?<!\\)(?:\\\\)*\\u(?:d[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}|(d[89a-f][0-9a-f]{2}))",
    re.IGNORECASE,
)
_NOT_BRACKET = bytes(byte for byte in range(256) if byte not in b"[{]}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def body_problem(body: bytes) -> str | None:
    """Why ``body`` is refused before parsing, in one line; None when it may be parsed."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"the request body is not UTF-8 text (byte {error.start})"
    for match in _SURROGATE.finditer(body):
        if match.group(1):
            return f"the request body holds a lone UTF-16 surrogate \\u{match.group(1).decode()}"
    if _depth(body) > MAX_JSON_DEPTH:
        return f"the request body nests deeper than {MAX_JSON_DEPTH} levels"
    return None


def _depth(body: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` outside strings (a rough count on non-JSON)."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKET)
    opened = brackets.count(b"[") + brackets.count(b"{")
    if opened <= MAX_JSON_DEPTH:
        return opened  # at most that deep: the common case, without a step per byte
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


class BodyCheck:
    """Reads a non-form body whole, refuses it with ``body_problem``'s line, or passes it on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        content_type = dict(scope.get("headers", [])).get(b"content-type", b"")
        if scope["type"] != "http" or content_type.lower().startswith(_FORMS):
            await self.app(scope, receive, send)
            return
        body, ended = await _read_all(receive)
        problem = body_problem(body) if body else None
        if problem is not None:
            await _refuse(send, problem)
            return
        await self.app(scope, _replay(body, ended, receive), send)


async def _read_all(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole body; the message that ended it early (a disconnect), if one did."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replay(body: bytes, ended: Message | None, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return ended if ended is not None else await receive()

    return replay


async def _refuse(send: Send, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
