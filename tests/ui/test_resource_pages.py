"""``/pools``, ``/variables``, ``/connections`` (op edits, secrets masked) and ``/users``
(admin only): each lists, creates, edits and deletes through CSRF-checked forms."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from api.security import verify_password
from state.core.db import session_scope
from state.engine.pools import pool_names
from state.records.connections import get_connection, get_variable, put_connection
from state.records.users import get_user
from tests.state.harness import Home
from tests.ui.conftest import csrf_of

Client = Callable[[str], TestClient]


def _post(client: TestClient, path: str, form: dict[str, str], page: str) -> tuple[int, str]:
    token = csrf_of(client.get(page).text)
    reply = client.post(path, data={"csrf_token": token, **form})
    return reply.status_code, reply.text


def test_pools_are_listed_created_edited_and_deleted_by_an_op(
    signed_in: Client, home: Home
) -> None:
    op = signed_in("op")
    code, html = _post(op, "/pools", {"name": "etl_pool", "slots": "4"}, "/pools")
    assert code == 200 and "Pool etl_pool has 4 slots." in html
    assert '<tr data-pool="etl_pool"><td><strong>etl_pool</strong></td><td>4</td>' in html
    assert 'value="4"' in op.get("/pools?edit=etl_pool").text
    code, html = _post(op, "/pools", {"name": "etl_pool", "slots": "lots"}, "/pools")
    assert code == 400 and "slots: &#39;lots&#39; is not a whole number" in html
    code, html = _post(op, "/pools/etl_pool/delete", {}, "/pools")
    assert code == 200 and "Pool etl_pool deleted." in html
    code, html = _post(op, "/pools/default_pool/delete", {}, "/pools")
    assert code == 400 and "default_pool cannot be deleted" in html
    with session_scope(home.url) as session:
        assert "etl_pool" not in pool_names(session)


def test_a_viewer_reads_but_cannot_edit(signed_in: Client, home: Home) -> None:
    viewer = signed_in("viewer")
    for page in ("/pools", "/variables", "/connections"):
        html = viewer.get(page).text
        assert viewer.get(page).status_code == 200 and 'class="card editor"' not in html
    code, html = _post(viewer, "/pools", {"name": "x", "slots": "1"}, "/pools")
    assert code == 403 and "<h1>Not allowed</h1>" in html and "it needs op" in html
    user = signed_in("user")
    assert _post(user, "/variables", {"key": "k", "value": "v"}, "/variables")[0] == 403
    with session_scope(home.url) as session:
        assert "x" not in pool_names(session) and get_variable(session, "k") is None


def test_forms_without_the_csrf_token_are_refused(signed_in: Client, home: Home) -> None:
    op = signed_in("op")
    op.get("/pools")
    assert op.post("/pools", data={"name": "p", "slots": "1"}).status_code == 403
    assert op.post("/variables", data={"key": "k", "value": "v"}).status_code == 403
    assert op.post("/connections", data={"conn_id": "c"}).status_code == 403
    admin = signed_in("admin")
    admin.get("/users")
    form = {"username": "eve", "role": "admin", "password": "pw", "csrf_token": "forged"}
    assert admin.post("/users", data=form).status_code == 403


def test_variables_keep_secrets_masked(signed_in: Client, home: Home) -> None:
    op = signed_in("op")
    _post(op, "/variables", {"key": "plain", "value": "hello"}, "/variables")
    code, html = _post(
        op, "/variables", {"key": "token", "value": "s3cr3t", "is_secret": "true"}, "/variables"
    )
    assert code == 200 and "hello" in html and "s3cr3t" not in html and "***" in html
    edit = op.get("/variables?edit=token").text
    assert "s3cr3t" not in edit and "secret: leave empty to keep it" in edit
    _post(op, "/variables", {"key": "token", "value": "", "is_secret": "true"}, "/variables")
    with session_scope(home.url) as session:
        assert get_variable(session, "token").value == "s3cr3t"  # type: ignore[union-attr]
    _post(op, "/variables/plain/delete", {}, "/variables")
    assert 'data-key="plain"' not in op.get("/variables").text


def test_connections_never_show_the_password(signed_in: Client, home: Home) -> None:
    with session_scope(home.url) as session:
        put_connection(
            session,
            "db",
            conn_type="postgres",
            host="h",
            password="hunter2",
            extra={"api_key": "k3y", "region": "eu"},
        )
    op = signed_in("op")
    for page in ("/connections", "/connections?edit=db"):
        html = op.get(page).text
        assert (
            "hunter2" not in html and "k3y" not in html and "&#34;region&#34;: &#34;eu&#34;" in html
        )
    form = {
        "conn_id": "db",
        "conn_type": "postgres",
        "host": "h2",
        "password": "",
        "extra": '{"api_key": "***", "region": "us"}',
    }
    code, _ = _post(op, "/connections", form, "/connections")
    with session_scope(home.url) as session:
        connection = get_connection(session, "db")
        assert connection is not None and connection.password == "hunter2"
        assert connection.host == "h2" and connection.extra == {"api_key": "k3y", "region": "us"}
    code, html = _post(op, "/connections", {"conn_id": "db", "port": "http"}, "/connections")
    assert code == 400 and "port: &#39;http&#39; is not a port number" in html
    code, html = _post(op, "/connections", {"conn_id": "db", "extra": "[1]"}, "/connections")
    assert code == 400 and "extra: must be a JSON object" in html
    code, html = _post(op, "/connections/db/delete", {}, "/connections")
    assert code == 200 and "Connection db deleted." in html


def test_users_are_admin_only(signed_in: Client, home: Home) -> None:
    for role in ("viewer", "user", "op"):
        reply = signed_in(role).get("/users")
        assert reply.status_code == 403 and "it needs admin" in reply.text
    assert 'data-user="viewer"' in signed_in("admin").get("/users").text


def test_an_admin_creates_edits_and_deletes_users(signed_in: Client, home: Home) -> None:
    admin = signed_in("admin")
    form = {"username": "dana", "role": "op", "password": "pw one"}
    code, html = _post(admin, "/users", form, "/users")
    assert code == 200 and "User dana saved (op)." in html
    form = {"username": "dana", "role": "viewer", "password": "", "existing": "true"}
    _post(admin, "/users", form, "/users")
    with session_scope(home.url) as session:
        dana = get_user(session, "dana")
        assert dana is not None and dana.role == "viewer"
        assert verify_password("pw one", dana.password_hash)
    code, html = _post(
        admin, "/users", {"username": "dana", "role": "op", "password": "x"}, "/users"
    )
    assert code == 400 and "already exists" in html
    code, html = _post(
        admin, "/users", {"username": "admin", "role": "op", "existing": "true"}, "/users"
    )
    assert code == 400 and "cannot take your own admin role away" in html
    code, html = _post(admin, "/users/admin/delete", {}, "/users")
    assert code == 400 and "cannot delete yourself" in html
    code, html = _post(admin, "/users/dana/delete", {}, "/users")
    assert code == 200 and 'data-user="dana"' not in html
