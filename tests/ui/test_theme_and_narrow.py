"""Dark colours (the system's prefers-color-scheme, or the reader's toggle kept in
localStorage) and the narrow-screen layout (400 px: the nav folds under a menu button, wide
tables scroll in their own box, the page itself never scrolls sideways), in headless chromium.

Every page touched is shot light, dark and 400 px wide under the test's tmp dir, to look at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.state.harness import Home
from tests.ui.conftest import PASSWORD
from tests.ui.test_grid_panel import _two_runs
from tests.ui.test_log_viewer import _running_with_a_log
from tests.ui.test_run_paging import _wide_run

Shoot = Callable[[Any, str], Path]
Opener = Callable[..., Any]
PAGES = {
    "home": "/home",
    "dags": "/dags",
    "grid": "/dags/etl",
    "run-400": "/dags/wide/runs/big",
    "task-log": "/dags/solo/runs/viewer/tasks/only",
    "task-instances": "/task_instances",
    "runs": "/dag_runs",
    "events": "/events",
}
DARK_GROUND = "rgb(13, 17, 23)"
#: The elements that reach past the window's right edge, named for a failure's message.
WIDER_THAN_THE_WINDOW = """() => Array.from(document.querySelectorAll("main *"))
  .filter(e => e.getBoundingClientRect().right > innerWidth + 1 && e.offsetParent !== null
               && !e.closest("table, .grid-card, .pg-log, .pg-table-scroll"))
  .slice(0, 6)
  .map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)
"""


@pytest.fixture
def open_as(browser: Any, live_server: str) -> Iterator[Opener]:
    """``open_as(width=..., color_scheme=...)``: a page signed in as admin in such a window."""
    contexts: list[Any] = []

    def open_page(width: int = 1400, color_scheme: str = "light") -> Any:
        context = browser.new_context(
            base_url=live_server,
            viewport={"width": width, "height": 900},
            color_scheme=color_scheme,
        )
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/auth/login?next=/dags")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/dags")
        return page

    yield open_page
    for context in contexts:
        context.close()


def _ground(page: Any) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


def _store(home: Home) -> None:
    _two_runs(home)
    _wide_run(home)
    _running_with_a_log(home, "viewer")


def test_the_system_dark_scheme_and_the_remembered_toggle(
    sqlite_home: Home, open_as: Opener, shoot: Shoot
) -> None:
    _store(sqlite_home)
    dark = open_as(color_scheme="dark")
    assert dark.locator("html").get_attribute("data-theme") == "dark"
    assert _ground(dark) == DARK_GROUND
    for name, path in PAGES.items():
        dark.goto(path)
        assert _ground(dark) == DARK_GROUND
        shoot(dark, f"dark-{name}")
    dark.goto("/dags/etl")
    dark.click("a.cell.tried[href='/dags/etl/runs/r1/tasks/load']")
    dark.locator("#grid-panel tr[data-try='1']").wait_for()
    shoot(dark, "dark-grid-panel")

    light = open_as(color_scheme="light")
    assert light.locator("html").get_attribute("data-theme") == "light"
    assert _ground(light) != DARK_GROUND
    toggle = light.locator("#theme-toggle")
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert light.locator("html").get_attribute("data-theme") == "dark"
    assert _ground(light) == DARK_GROUND
    light.goto("/dags/etl")  # remembered across pages and reloads
    assert light.locator("html").get_attribute("data-theme") == "dark"
    assert light.locator("#theme-toggle").get_attribute("aria-pressed") == "true"
    light.click("#theme-toggle")
    light.reload()
    assert light.locator("html").get_attribute("data-theme") == "light"
    for name, path in PAGES.items():
        light.goto(path)
        shoot(light, f"light-{name}")


def test_every_page_is_usable_400_px_wide(sqlite_home: Home, open_as: Opener, shoot: Shoot) -> None:
    _store(sqlite_home)
    narrow = open_as(width=400)
    nav = narrow.locator("nav.main")
    too_wide = {}
    for name, path in PAGES.items():
        narrow.goto(path)
        shoot(narrow, f"narrow-{name}")
        # The page does not scroll sideways: what is wider scrolls in its own box.
        width = narrow.evaluate("document.documentElement.scrollWidth")
        if width > 400:
            too_wide[name] = (width, narrow.evaluate(WIDER_THAN_THE_WINDOW))
    assert not too_wide
    assert nav.is_hidden()
    narrow.click("#nav-toggle")
    assert nav.is_visible()
    assert narrow.locator("#nav-toggle").get_attribute("aria-expanded") == "true"
    shoot(narrow, "narrow-menu-open")
    narrow.click("nav.main a:text-is('Task instances')")
    narrow.wait_for_url("**/task_instances")
    table = narrow.locator("table.list").first
    wide = table.evaluate("t => [t.scrollWidth, t.clientWidth]")
    assert wide[0] > wide[1]  # the table scrolls in its box
    narrow.goto("/dags/etl")
    narrow.click("a.cell.tried[href='/dags/etl/runs/r1/tasks/load']")
    narrow.locator("#grid-panel tr[data-try='1']").wait_for()
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 400
    shoot(narrow, "narrow-grid-panel")
