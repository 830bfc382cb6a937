"""Connection passwords, extras and variables are encrypted in SQL with the operator's Fernet key.

PostgreSQL is read directly (psycopg, no model in between): the raw rows must hold no plaintext,
while the records still read the plain values. Rotation: values sealed under an old key are
resealed under the new first key, after which the old key can go.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from state.core import NO_KEY_WARNING, SecretUnreadable, forget_keys, session_scope, upgrade
from state.core.cipher import _warn_once
from state.records import (
    get_connection,
    get_variable,
    put_connection,
    reseal_connection,
    reseal_variable,
    set_variable,
)
from tests.stores import migrated
from tradewind.settings import SettingsError, reload_settings

PG_DATABASE_PREFIX = "tw_fernet_"
PASSWORD = "pw-Zq81-secret"
EXTRA_TOKEN = "extra-tok-4471"
VARIABLE = "-----BEGIN KEY-----\nline-two-9931\n-----END KEY-----"

UseKeys = Callable[..., None]


@pytest.fixture
def use_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[UseKeys]:
    """Set TRADEWIND_FERNET_KEY (none: unset) for what runs next in this process."""
    monkeypatch.setenv("TRADEWIND_HOME", str(tmp_path / "home"))

    def use(*keys: bytes) -> None:
        if keys:
            monkeypatch.setenv("TRADEWIND_FERNET_KEY", ",".join(k.decode() for k in keys))
        else:
            monkeypatch.delenv("TRADEWIND_FERNET_KEY", raising=False)
        reload_settings()

    use()
    yield use
    monkeypatch.undo()
    reload_settings()


@pytest.fixture
def store(pg_url: str) -> str:
    migrated(pg_url)
    return pg_url


def write_secrets(url: str) -> None:
    with session_scope(url) as session:
        put_connection(
            session, "warehouse", conn_type="postgres", login="etl", password=PASSWORD,
            extra={"token": EXTRA_TOKEN, "region": "eu"},
        )  # fmt: skip
        set_variable(session, "pem", VARIABLE, is_secret=True)
        set_variable(session, "plain", "hello-visible")


def raw_rows(url: str) -> str:
    """Every column of both tables as PostgreSQL holds them, as one text."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT * FROM connection").fetchall()
        rows += connection.execute("SELECT * FROM variable").fetchall()
    return repr(rows)


def read_back(url: str) -> tuple[str | None, dict[str, object], str, str]:
    with session_scope(url) as session:
        connection = get_connection(session, "warehouse")
        pem, plain = get_variable(session, "pem"), get_variable(session, "plain")
        assert connection is not None and pem is not None and plain is not None
        return connection.password, connection.extra, pem.value, plain.value


EXPECTED = (PASSWORD, {"token": EXTRA_TOKEN, "region": "eu"}, VARIABLE, "hello-visible")


@pytest.mark.integration
def test_sql_holds_no_plaintext_and_the_records_read_the_values(
    store: str, use_keys: UseKeys
) -> None:
    use_keys(Fernet.generate_key())
    write_secrets(store)
    raw = raw_rows(store)
    for secret in (PASSWORD, EXTRA_TOKEN, "line-two-9931", "hello-visible", "region"):
        assert secret not in raw
    assert "etl" in raw  # the login is not a secret
    with psycopg.connect(store) as connection:
        flags = connection.execute(
            "SELECT is_encrypted, is_extra_encrypted FROM connection"
        ).fetchall()
        variable_flags = connection.execute("SELECT is_encrypted FROM variable").fetchall()
    assert flags == [(True, True)] and variable_flags == [(True,), (True,)]
    assert read_back(store) == EXPECTED


@pytest.mark.integration
def test_rotation_to_a_new_key_then_dropping_the_old_one(store: str, use_keys: UseKeys) -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    use_keys(old)
    write_secrets(store)
    before = raw_rows(store)
    use_keys(new, old)  # the new key first: it encrypts, both decrypt
    assert read_back(store) == EXPECTED
    assert reseal_all(store) == ["resealed"] * 3
    assert reseal_all(store) == ["current"] * 3  # a second run has nothing left to do
    assert raw_rows(store) != before
    use_keys(new)
    assert read_back(store) == EXPECTED
    use_keys(old)
    with pytest.raises(SecretUnreadable) as raised:
        read_back(store)
    assert str(raised.value) == (
        "connection 'warehouse''s password cannot be decrypted with any key of "
        "TRADEWIND_FERNET_KEY: it was encrypted with a key no longer configured (add that key "
        "back, after the first)"
    )


def reseal_all(url: str) -> list[str]:
    with session_scope(url) as session:
        return [
            reseal_connection(session, "warehouse"),
            reseal_variable(session, "pem"),
            reseal_variable(session, "plain"),
        ]


@pytest.mark.integration
def test_without_a_key_values_are_plaintext_said_once_and_sealed_by_a_later_rotation(
    store: str, use_keys: UseKeys, caplog: pytest.LogCaptureFixture
) -> None:
    _warn_once.cache_clear()
    caplog.set_level(logging.WARNING, logger="state.core.cipher")
    write_secrets(store)
    write_secrets(store)
    assert [r.getMessage() for r in caplog.records] == [NO_KEY_WARNING]
    assert PASSWORD in raw_rows(store)
    assert read_back(store) == EXPECTED
    use_keys(Fernet.generate_key())
    assert read_back(store) == EXPECTED  # plaintext rows stay readable once a key is set
    assert reseal_all(store) == ["resealed"] * 3
    assert PASSWORD not in raw_rows(store) and EXTRA_TOKEN not in raw_rows(store)
    assert read_back(store) == EXPECTED
    use_keys()
    with pytest.raises(SecretUnreadable, match=r"^connection 'warehouse''s password is encrypted"):
        read_back(store)


def test_a_malformed_key_is_one_line_naming_the_variable(
    use_keys: UseKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = Fernet.generate_key().decode()
    monkeypatch.setenv("TRADEWIND_FERNET_KEY", f"{good},not-a-key")
    with pytest.raises(SettingsError) as raised:
        reload_settings()
    message = str(raised.value)
    assert message.startswith("TRADEWIND_FERNET_KEY: Value error, key 2 is not a Fernet key")
    assert "not-a-key" not in message and good not in message and "\n" not in message


def test_a_downgrade_below_the_migration_refuses_while_rows_are_encrypted(
    tmp_path: Path, use_keys: UseKeys
) -> None:
    from alembic import command

    from state.core import alembic_config

    url = f"sqlite:///{tmp_path}/store.db"
    upgrade(url)
    use_keys(Fernet.generate_key())
    with session_scope(url) as session:
        set_variable(session, "k", "v")
    with pytest.raises(RuntimeError, match="variable rows are encrypted"):
        command.downgrade(alembic_config(url), "0011_slots")
    with session_scope(url) as session:
        session.execute(text("DELETE FROM variable"))
    command.downgrade(alembic_config(url), "0011_slots")


def test_the_home_key_file_is_used_without_the_variable_and_a_damaged_one_is_one_line(
    tmp_path: Path, use_keys: UseKeys
) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    upgrade(url)
    key_file = tmp_path / "home" / "fernet_key"
    key_file.parent.mkdir()
    key_file.write_text(Fernet.generate_key().decode() + "\n")
    forget_keys()
    with session_scope(url) as session:
        set_variable(session, "k", "v-in-the-file-key")
    with session_scope(url) as session:
        row = get_variable(session, "k")
        assert row is not None and (row.value, row.is_encrypted) == ("v-in-the-file-key", True)
    key_file.write_text("damaged\n")
    forget_keys()
    with pytest.raises(SecretUnreadable) as raised, session_scope(url) as session:
        assert get_variable(session, "k").value  # type: ignore[union-attr]
    assert str(raised.value) == f"{key_file} does not hold a Fernet key: delete it or fix it"
    forget_keys()
