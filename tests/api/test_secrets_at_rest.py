"""Through the API, with TRADEWIND_FERNET_KEY set: values written are encrypted in PostgreSQL,
read back as before, ``is_encrypted`` is true, and a value under a key the server lacks is a
one-line error naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from api.app import create_app
from api.security import hash_password
from state.core import session_scope
from state.records import Role, create_user, get_connection
from tests.api.conftest import PASSWORD, conforms
from tests.state.harness import Home, tradewind_home
from tradewind.settings import reload_settings

V2 = "/api/v2"
KEY = Fernet.generate_key().decode()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch, database_url=pg_url, fernet_key=KEY) as made:
        with session_scope(made.url) as session:
            create_user(session, "op", hash_password(PASSWORD), Role.OP)
        yield made


@pytest.fixture
def api(home: Home) -> Iterator[TestClient]:
    with TestClient(create_app(home.settings)) as client:
        token = client.post("/auth/token", json={"username": "op", "password": PASSWORD})
        client.headers["Authorization"] = f"Bearer {token.json()['access_token']}"
        yield client


@pytest.mark.integration
def test_values_are_encrypted_in_sql_and_read_back(api: TestClient, home: Home) -> None:
    api.post(f"{V2}/variables", json={"key": "region", "value": "eu-west-77"})
    body = {
        "connection_id": "warehouse",
        "conn_type": "postgres",
        "password": "pw-55-secret",
        "extra": json.dumps({"sslmode": "require-9", "api_key": "k-123"}),
    }
    assert api.post(f"{V2}/connections", json=body).status_code == 201
    variable = api.get(f"{V2}/variables/region").json()
    conforms("VariableResponse", variable)
    assert (variable["value"], variable["is_encrypted"]) == ("eu-west-77", True)
    shown = api.get(f"{V2}/connections/warehouse").json()
    assert json.loads(shown["extra"]) == {"sslmode": "require-9", "api_key": "***"}
    with psycopg.connect(home.url) as connection:
        raw = repr(connection.execute("SELECT * FROM variable").fetchall())
        raw += repr(connection.execute("SELECT * FROM connection").fetchall())
    for plain in ("eu-west-77", "pw-55-secret", "require-9", "k-123"):
        assert plain not in raw
    with session_scope(home.url) as session:
        stored = get_connection(session, "warehouse")
        assert stored is not None and stored.password == "pw-55-secret"


@pytest.mark.integration
def test_a_value_under_a_key_the_server_lacks_is_one_line_naming_it(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.post(f"{V2}/variables", json={"key": "region", "value": "eu"})
    monkeypatch.setenv("TRADEWIND_FERNET_KEY", Fernet.generate_key().decode())
    reload_settings()
    reply = api.get(f"{V2}/variables/region")
    assert reply.status_code == 500
    assert reply.json() == {
        "detail": "variable 'region' cannot be decrypted with any key of TRADEWIND_FERNET_KEY: "
        "it was encrypted with a key no longer configured (add that key back, after the first)"
    }
