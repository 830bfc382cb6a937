"""The Jinja2 templates of the pages (``api/templates``, shipped in the package).

Every template gets ``csrf_token()`` (the session's token, for each form), ``user`` (the
signed-in name, or None) and ``flash`` (the notice a form left for the next page, shown once).
``render`` is what a page route returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from api.csrf import csrf_token

TEMPLATES_DIR = Path(__file__).with_name("templates")
FLASH_KEY = "flash"
STATIC_DIR = Path(__file__).with_name("static")
templates = Jinja2Templates(directory=TEMPLATES_DIR)


def render(
    request: Request, name: str, context: dict[str, Any] | None = None, status_code: int = 200
) -> HTMLResponse:
    session = request.session if "session" in request.scope else {}
    values = {
        "csrf_token": lambda: csrf_token(request),
        "user": session.get("user"),
        "flash": session.pop(FLASH_KEY, None),
        **(context or {}),
    }
    return templates.TemplateResponse(request, name, values, status_code=status_code)
