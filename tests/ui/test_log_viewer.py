"""The task page's log viewer: each line coloured by its level, a level filter, a wrap toggle
and a download of the whole try, while a running try's log is still followed.

The browser test saves screenshots under the test's tmp dir (``shoot``) to be looked at.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update

from api.logs import try_log
from state.core.db import session_scope
from state.core.models import TaskInstance, utcnow
from tests.state.harness import Home

Shoot = Callable[[Any, str], Path]
SignedIn = Callable[[str], TestClient]
TASK = "/dags/solo/runs/{run_id}/tasks/only"
T = "2026-12-04T10:00:00.000000+00:00"
LOG = (
    f"[{T}] supervisor: try 1 of only started on w1\n"
    f"[{T}] stderr: DEBUG task.loader: opened the file\n"
    f"[{T}] stdout: reading 3 rows\n"
    f"[{T}] stderr: WARNING task.loader: row 2 has no price\n"
    f"[{T}] stderr: ERROR task.loader: row 3 is broken\n"
    f"[{T}] stderr: Traceback (most recent call last):\n"
    f"[{T}] stderr: ValueError: row 3\n"
)


def _running_with_a_log(home: Home, run_id: str, text: str = LOG) -> Path:
    home.trigger("solo", run_id=run_id)
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run_id, TaskInstance.task_id == "only")
            .values(state="running", try_number=1, start_date=utcnow(), hostname="w1")
        )
    path = try_log(home.settings.logs_folder, ("solo", run_id, "only", -1), 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_log_window_names_each_lines_level(signed_in: SignedIn, home: Home) -> None:
    _running_with_a_log(home, "levels")
    client = signed_in("viewer")
    reply = client.get(TASK.format(run_id="levels") + "/log", params={"try_number": 1}).json()
    assert reply["levels"] == ["info", "debug", "info", "warning", "error", "error", "error"]
    page = client.get(TASK.format(run_id="levels")).text
    assert '<span class="ll ll-warning">[' in page and "row 2 has no price" in page
    assert 'id="pg-log-level"' in page and 'id="pg-log-wrap"' in page


def test_the_download_is_the_whole_try_for_a_signed_in_user_only(
    signed_in: SignedIn, home: Home
) -> None:
    whole = LOG + "".join(f"[{T}] stdout: filler line {n:06d}\n" for n in range(20_000))
    _running_with_a_log(home, "whole", whole)
    url = TASK.format(run_id="whole") + "/log/download"
    reply = signed_in("viewer").get(url, params={"try_number": 1})
    assert reply.status_code == 200
    assert reply.text == whole  # every line, not the page's window of 256 KiB
    assert reply.headers["content-type"].startswith("text/plain")
    assert 'filename="solo__whole__only__try1.log"' in reply.headers["content-disposition"]
    missing = signed_in("viewer").get(url, params={"try_number": 2})
    assert missing.status_code == 404 and "no log of try 2" in missing.text
    with TestClient(signed_in("viewer").app) as stranger:
        refused = stranger.get(url, params={"try_number": 1}, follow_redirects=False)
    assert refused.status_code in (303, 307, 401), refused.status_code
    assert "filler line" not in refused.text


def test_levels_filter_wrap_and_download_in_chromium(
    sqlite_home: Home, page: Any, shoot: Shoot
) -> None:
    path = _running_with_a_log(sqlite_home, "viewer")
    page.goto(TASK.format(run_id="viewer"))
    page.wait_for_selector("#pg-log .ll-error:has-text('row 3 is broken')")
    assert "row 2 has no price" in page.locator("#pg-log .ll-warning").inner_text()
    assert page.locator("#pg-log .ll-debug").is_visible()
    shoot(page, "log-levels")

    page.select_option("#pg-log-level", "warning")
    assert page.locator("#pg-log .ll-debug").is_hidden()
    assert page.locator("#pg-log .ll-info").first.is_hidden()
    assert page.locator("#pg-log .ll-warning").is_visible()
    assert "3 lines hidden" in page.locator("#pg-log-hidden").inner_text()
    shoot(page, "log-warnings-only")

    # Still followed while the try runs: new lines come in coloured, and the filter applies.
    with path.open("a") as log:
        log.write(f"[{T}] stdout: one more row read\n[{T}] stderr: CRITICAL task: out of disk\n")
    page.wait_for_selector("#pg-log .ll-critical:has-text('out of disk')", timeout=60_000)
    assert page.locator("#pg-log .ll-info:has-text('one more row read')").is_hidden()

    page.uncheck("#pg-log-wrap")
    assert "pg-log-nowrap" in (page.locator("#pg-log").get_attribute("class") or "")
    page.reload()  # the reader's choices are kept
    page.wait_for_selector("#pg-log .ll-critical")
    assert page.locator("#pg-log-level").input_value() == "warning"
    assert not page.locator("#pg-log-wrap").is_checked()

    href = page.locator("#pg-log-download").get_attribute("href")
    assert href is not None
    with page.expect_download() as started:
        page.click("#pg-log-download")
    saved = Path(started.value.path())
    assert saved.read_text() == path.read_text()
