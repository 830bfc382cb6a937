"""A 200 MB log through the API and the task page: every answer is a bounded window of it.

The API reads forward from its continuation token (Airflow's readers expect the log in order);
the page opens on the tail, pages back with ``before`` and follows with ``offset``, jumping to the
tail when far behind (api/logs.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from api.logs import MAX_LOG_CHUNK_BYTES, MAX_LOG_CHUNK_LINES
from api.pages.task_instances import LOG_CHUNK_BYTES
from state.core.db import session_scope
from state.core.models import TaskInstance, utcnow
from tests.api.conftest import conforms
from tests.state.harness import TI, Home
from tests.ui.conftest import sign_in
from tradewind.settings import log_path

Headers = Callable[[str], dict[str, str]]
RUN = "/api/v2/dags/etl/dagRuns/r1"
PAGE = "/dags/etl/runs/r1/tasks/extract"
MB = 1000 * 1000
FILLER = "".join(f"[2026-12-04T10:00:00.000+00:00] stdout: filler {n:06}\n" for n in range(20000))


def _large_log(home: Home, state: TI = TI.SUCCESS) -> Path:
    """extract's first try, ended (or running) with a log of 200 MB: a first and a last line."""
    run_pk = home.trigger("etl", run_id="r1")
    home.schedule(run_pk)
    ti = home.ti(run_pk, "extract")
    with session_scope(home.url) as session:
        values = {"try_number": 1, "hostname": "h1", "state": state, "start_date": utcnow()}
        session.execute(update(TaskInstance).where(TaskInstance.id == ti.id).values(**values))
    path = log_path(home.settings.logs_folder, "etl", "r1", "extract", -1, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    block = FILLER.encode()
    with path.open("wb") as log:
        log.write(b"the very first line\n")
        for _ in range(200 * MB // len(block)):
            log.write(block)
        log.write(b"the very last line\n")
    assert path.stat().st_size > 200 * MB - len(block)
    return path


def test_the_api_serves_a_200_mb_log_in_bounded_chunks_in_order(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    path = _large_log(home)
    url = f"{RUN}/taskInstances/extract/logs/1"
    first = api.get(url, headers=as_role("viewer"))
    conforms("TaskInstancesLogResponse", first.json())
    assert len(first.content) < 2 * MAX_LOG_CHUNK_BYTES  # the JSON of at most 1 MiB or 5,000 lines
    body = first.json()
    assert body["content"][0]["event"] == "the very first line"
    token = body["continuation_token"]
    assert 0 < int(token) <= MAX_LOG_CHUNK_BYTES
    second = api.get(url, params={"token": token}, headers=as_role("viewer")).json()
    assert second["content"][0]["event"] == "filler " + _next_filler(body)
    assert (second["content"][0]["level"], second["content"][0]["source"]) == ("info", "stdout")
    assert len(body["content"]) == MAX_LOG_CHUNK_LINES
    last_token = str(path.stat().st_size - len("the very last line\n"))
    last = api.get(url, params={"token": last_token}, headers=as_role("viewer")).json()
    assert [line["event"] for line in last["content"]] == ["the very last line"]
    assert last["continuation_token"] is None
    text = api.get(url, headers={**as_role("viewer"), "Accept": "text/plain"})
    assert len(text.content) <= MAX_LOG_CHUNK_BYTES + 1


def _next_filler(body: dict[str, list[dict[str, str]]]) -> str:
    number = int(body["content"][-1]["event"].rsplit(" ", 1)[1])
    return f"{(number + 1) % 20000:06}"


@pytest.mark.parametrize("token", [str(2**63), "9" * 5000, "²", "-1", "12a", str(10**12)])
def test_a_token_that_is_no_offset_into_the_log_is_a_400(
    api: TestClient, as_role: Headers, home: Home, token: str
) -> None:
    run_pk = home.trigger("etl", run_id="r1")
    home.schedule(run_pk)
    ti = home.ti(run_pk, "extract")
    with session_scope(home.url) as session:
        session.execute(update(TaskInstance).where(TaskInstance.id == ti.id).values(try_number=1))
    path = log_path(home.settings.logs_folder, "etl", "r1", "extract", -1, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("one line\n")
    reply = api.get(
        f"{RUN}/taskInstances/extract/logs/1", params={"token": token}, headers=as_role("viewer")
    )
    assert reply.status_code == 400
    assert reply.json()["detail"].startswith("continuation token ")
    assert reply.json()["detail"].endswith(" is not one this server gave")


def _page_client(api: TestClient) -> TestClient:
    sign_in(api, "viewer")
    return api


def test_the_task_page_opens_on_the_tail_of_a_200_mb_log(api: TestClient, home: Home) -> None:
    path = _large_log(home)
    client = _page_client(api)
    page = client.get(PAGE)
    assert page.status_code == 200
    assert len(page.content) < LOG_CHUNK_BYTES + 64 * 1024
    assert "the very last line" in page.text and "the very first line" not in page.text
    assert 'id="pg-log-earlier">Earlier lines' in page.text  # not hidden: there is more
    size = path.stat().st_size
    assert f'data-offset="{size}"' in page.text


def test_the_page_pages_back_and_a_follower_far_behind_jumps_to_the_tail(
    api: TestClient, home: Home
) -> None:
    path = _large_log(home, state=TI.RUNNING)
    size = path.stat().st_size
    client = _page_client(api)
    tail = client.get(f"{PAGE}/log", params={"try_number": 1}).json()
    assert (tail["offset"], tail["size"], tail["live"]) == (size, size, True)
    assert size - tail["start"] <= LOG_CHUNK_BYTES
    assert tail["text"].endswith("the very last line\n")
    assert tail["text"].startswith("[2026")  # whole lines only
    back = client.get(f"{PAGE}/log", params={"try_number": 1, "before": tail["start"]}).json()
    assert back["offset"] == tail["start"] and 0 < tail["start"] - back["start"] <= LOG_CHUNK_BYTES
    assert back["text"].startswith("[2026") and back["text"].endswith("\n")
    first = client.get(f"{PAGE}/log", params={"try_number": 1, "before": 1000}).json()
    assert first["start"] == 0 and first["text"].startswith("the very first line\n")
    behind = client.get(f"{PAGE}/log", params={"try_number": 1, "offset": 5}).json()
    assert behind["start"] == tail["start"] and behind["offset"] == size  # the tail, not byte 5
    with path.open("a") as log:
        log.write("one more line\n")
    follow = client.get(f"{PAGE}/log", params={"try_number": 1, "offset": size}).json()
    assert (follow["start"], follow["text"]) == (size, "one more line\n")
    both = client.get(f"{PAGE}/log", params={"try_number": 1, "offset": 0, "before": 9})
    assert both.status_code == 400 and both.json()["detail"] == "give offset or before, not both"
