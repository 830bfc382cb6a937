"""The shell every page shares: the nav, who is signed in, signing out, the refusal page."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient


def test_every_page_has_the_nav_and_the_signed_in_user(
    signed_in: Callable[[str], TestClient],
) -> None:
    html = signed_in("viewer").get("/dags").text
    for label in ("DAGs", "Pools", "Variables", "Connections", "Users"):
        assert f">{label}</a>" in html
    assert '<span class="who">viewer</span>' in html
    assert 'href="/dags" aria-current="page"' in html


def test_a_browser_signs_in_sees_the_dags_and_signs_out(
    page: Any, shoot: Callable[[Any, str], Path]
) -> None:
    assert page.locator("nav.main a[aria-current=page]").inner_text() == "DAGs"
    assert page.locator("header .who").inner_text() == "admin"
    assert page.get_by_role("link", name="etl").is_visible()
    shoot(page, "shell-dags")
    page.click("text=Sign out")
    page.wait_for_url("**/auth/login")
    page.goto("/dags")
    page.wait_for_url("**/auth/login?next=/dags")
