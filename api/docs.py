"""The API's documentation pages: Swagger UI at ``/docs`` and ReDoc at ``/redoc``, no CDN.

Both read ``/openapi.json``. Their scripts and styles are the files the ``fastapi-offline``
package ships (Swagger UI 5, which reads OpenAPI 3.1, and ReDoc), served by this server under
``/static/docs/``; the pages start them from ``api/static/docs.js`` or a ``<redoc>`` element,
so the Content-Security-Policy's ``script-src 'self'`` holds on them too.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import Request
from fastapi.responses import HTMLResponse

from api.templating import render

DOCS_ASSETS = Path(fastapi_offline.__file__).with_name("static")


def api_docs(request: Request) -> HTMLResponse:
    """Swagger UI on the server's OpenAPI document."""
    return render(request, "docs.html", {"openapi_url": request.app.openapi_url})


def api_redoc(request: Request) -> HTMLResponse:
    """ReDoc on the server's OpenAPI document."""
    return render(request, "redoc.html", {"openapi_url": request.app.openapi_url})
