"""The pages and the API docs work under the Content-Security-Policy: nothing is blocked.

Chromium reports every script, style or frame the policy refuses on the console; each page here
is loaded, used, and its console read. A delete form's confirmation (``data-confirm``, read by
``tradewind.js``) still asks, and only an OK deletes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from state.core.db import session_scope
from state.records import get_variable, set_variable
from tests.state.harness import Home

Shoot = Callable[[Any, str], Path]


def _violations(page: Any) -> list[str]:
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text))
    page.on("pageerror", lambda error: seen.append(str(error)))
    return seen


def test_the_api_docs_render_from_this_server_under_the_policy(page: Any, shoot: Shoot) -> None:
    messages = _violations(page)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    page.wait_for_selector(".opblock-tag-section")
    assert "Tradewind" in page.inner_text(".swagger-ui .info .title")
    shoot(page, "docs")
    base = page.url.split("/docs")[0]
    assert asked and all(url.startswith(base) for url in asked), asked
    assert not [m for m in messages if "Content Security Policy" in m], messages


def test_redoc_renders_from_this_server(page: Any, shoot: Shoot) -> None:
    """ReDoc renders; the policy refuses only its search worker (a ``blob:`` script) and the
    logo it would fetch from its vendor's CDN, and it reads without both."""
    messages = _violations(page)
    page.goto("/redoc")
    page.wait_for_selector("h1:has-text('Tradewind')")
    page.wait_for_selector("h2:has-text('Get Version')")
    shoot(page, "redoc")
    refused = [m for m in messages if "Content Security Policy" in m]
    assert all("blob:" in m or "cdn.redoc.ly" in m for m in refused), refused


def test_pages_run_their_scripts_under_the_policy(
    page: Any, shoot: Shoot, sqlite_home: Home
) -> None:
    messages = _violations(page)
    with session_scope(sqlite_home.url) as session:
        set_variable(session, "doomed", "1")
    page.goto("/dags")
    page.wait_for_selector("table")
    shoot(page, "dags")
    page.goto("/variables")
    answers: list[str] = []

    def answer(dialog: Any) -> None:
        answers.append(dialog.message)
        dialog.dismiss() if len(answers) == 1 else dialog.accept()

    page.on("dialog", answer)
    delete = page.locator("form[data-confirm='Delete variable doomed?'] button")
    delete.click()  # dismissed: nothing is deleted
    page.wait_for_timeout(500)
    with session_scope(sqlite_home.url) as session:
        assert get_variable(session, "doomed") is not None
    with page.expect_navigation():
        delete.click()  # accepted
    assert answers == ["Delete variable doomed?"] * 2
    with session_scope(sqlite_home.url) as session:
        assert get_variable(session, "doomed") is None
    shoot(page, "variables")
    assert not [m for m in messages if "Content Security Policy" in m], messages
