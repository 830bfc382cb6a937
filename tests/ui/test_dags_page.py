"""``/dags``: the list, its latest runs, the paused switch (role, CSRF), import errors, paging."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from state.core.db import session_scope
from state.core.models import DagImportError
from tests.state.harness import Home, counting_statements
from tests.ui.conftest import csrf_of

Client = Callable[[str], TestClient]


def test_the_list_shows_each_dag_its_tags_and_its_latest_runs(
    signed_in: Client, home: Home
) -> None:
    home.trigger("etl", run_id="first")
    html = signed_in("viewer").get("/dags").text
    assert 'href="/dags/etl"' in html and 'href="/dags/solo"' in html
    assert '<a class="tag" href="/dags?tags=nightly">nightly</a>' in html
    assert 'href="/dags/etl/runs/first"' in html and "dot state-queued" in html
    assert "Extract, transform, load" in html


def test_a_signed_out_browser_is_sent_to_sign_in(home: Home) -> None:
    from api import create_app

    with TestClient(create_app(home.settings)) as client:
        reply = client.get("/dags", follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == "/auth/login?next=/dags"


def _pause(client: TestClient, paused: str, token: str | None) -> int:
    form = {"paused": paused, "back": "/dags"}
    if token is not None:
        form["csrf_token"] = token
    return client.post("/dags/etl/paused", data=form, follow_redirects=False).status_code


def test_a_user_pauses_and_unpauses_a_dag(signed_in: Client, home: Home) -> None:
    client = signed_in("user")
    token = csrf_of(client.get("/dags").text)
    assert _pause(client, "true", token) == 303
    assert home.dag_model("etl").is_paused
    page = client.get("/dags").text
    assert "etl is paused." in page and 'aria-label="Unpause etl"' in page
    assert _pause(client, "false", token) == 303
    assert not home.dag_model("etl").is_paused


def test_pausing_needs_the_csrf_token_and_the_user_role(signed_in: Client, home: Home) -> None:
    user = signed_in("user")
    csrf_of(user.get("/dags").text)
    assert _pause(user, "true", None) == 403
    assert _pause(user, "true", "forged") == 403
    viewer = signed_in("viewer")
    page = viewer.get("/dags").text
    assert 'aria-label="Pause etl"' not in page  # a still switch, no form
    refused = viewer.post("/dags/etl/paused", data={"paused": "true", "csrf_token": csrf_of(page)})
    assert refused.status_code == 403 and "needs user" in refused.text
    assert "<h1>Not allowed</h1>" in refused.text
    assert not home.dag_model("etl").is_paused


def test_import_errors_are_listed(signed_in: Client, home: Home) -> None:
    with session_scope(home.url) as session:
        session.add(
            DagImportError(fileloc="/dags/broken.py", error="SyntaxError: bad", traceback="tb")
        )
    html = signed_in("viewer").get("/dags").text
    assert "Import errors (1)" in html and "/dags/broken.py" in html and "SyntaxError: bad" in html


def test_the_list_costs_the_same_statements_with_many_runs(signed_in: Client, home: Home) -> None:
    client = signed_in("viewer")
    client.get("/dags")

    def statements() -> int:
        with counting_statements(home.url) as counter:
            assert client.get("/dags").status_code == 200
        return len(counter.statements)

    few = statements()
    for index in range(30):
        home.trigger("etl", run_id=f"r{index}")
        home.trigger("solo", run_id=f"r{index}")
    assert statements() == few
    assert client.get("/dags").text.count('href="/dags/etl/runs/') == 10


def test_the_list_is_paged(signed_in: Client, home: Home) -> None:
    source = "\n".join(
        f'with DAG("many_{index:02}"):\n    step.override(task_id="t")()' for index in range(30)
    )
    header = "from tradewind import DAG, task\n\n@task\ndef step():\n    pass\n\n"
    home.write_dag(header + source, "many.py")
    home.sync()
    client = signed_in("viewer")
    first = client.get("/dags").text
    assert "1\u201325 of 32" in first and 'href="/dags?page=2"' in first
    second = client.get("/dags?page=2").text
    assert "26\u201332 of 32" in second and 'href="/dags/solo"' in second
