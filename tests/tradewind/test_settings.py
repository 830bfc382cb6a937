"""Settings: defaults, ``TRADEWIND_*`` overrides, and one-line errors naming the variable."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tradewind.settings import ENV_PREFIX, SettingsError, get_settings, reload_settings


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """A clean environment (no ``TRADEWIND_*``) in an empty directory; settings restored after."""
    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    reload_settings()
    yield monkeypatch
    # Undo first: the cached settings must be read from the environment as it was before.
    monkeypatch.undo()
    reload_settings()


def test_defaults(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = get_settings()
    home = tmp_path.resolve() / ".tradewind"

    assert settings.resolved_home == home
    assert settings.database_url is None
    assert settings.sql_url == f"sqlite:///{home / 'tradewind.db'}"
    assert settings.broker_url is None
    assert settings.broker == "filesystem://localhost/"
    assert settings.broker_folder == home / "broker"
    assert settings.logs_folder == home / "logs"
    assert settings.xcom_backend == "sql"
    assert settings.state_store_max_value_bytes == 65536
    assert settings.heartbeat_seconds == 5.0
    assert settings.zombie_threshold_seconds == 30.0
    assert settings.task_queued_timeout_seconds == 60.0


def test_sqlite_url_follows_tradewind_home(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("TRADEWIND_HOME", str(tmp_path / "elsewhere"))

    settings = reload_settings()

    assert settings.sql_url == f"sqlite:///{tmp_path.resolve() / 'elsewhere' / 'tradewind.db'}"
    assert settings.broker_folder == tmp_path.resolve() / "elsewhere" / "broker"


def test_env_overrides(env: pytest.MonkeyPatch) -> None:
    env.setenv("TRADEWIND_DATABASE_URL", "postgresql+psycopg://tw@db:5432/tradewind")
    env.setenv("TRADEWIND_BROKER_URL", "redis://redis:6379/0")
    env.setenv("TRADEWIND_HEARTBEAT_SECONDS", "2.5")
    env.setenv("TRADEWIND_ZOMBIE_THRESHOLD_SECONDS", "15")
    env.setenv("TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS", "120")
    env.setenv("TRADEWIND_STATE_STORE_MAX_VALUE_BYTES", "1024")
    env.setenv("TRADEWIND_XCOM_BACKEND", "my.backends.S3XCom")

    settings = reload_settings()

    assert settings.sql_url == "postgresql+psycopg://tw@db:5432/tradewind"
    assert settings.broker == "redis://redis:6379/0"
    assert settings.heartbeat_seconds == 2.5
    assert settings.zombie_threshold_seconds == 15.0
    assert settings.task_queued_timeout_seconds == 120.0
    assert settings.state_store_max_value_bytes == 1024
    assert settings.xcom_backend == "my.backends.S3XCom"


def test_variable_names_are_case_insensitive(env: pytest.MonkeyPatch) -> None:
    env.setenv("tradewind_heartbeat_seconds", "7")

    assert reload_settings().heartbeat_seconds == 7.0


def test_dags_folder_from_env(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("TRADEWIND_DAGS_FOLDER", str(tmp_path / "my_dags"))

    assert reload_settings().resolved_dags_folder == tmp_path.resolve() / "my_dags"


def test_dags_folder_defaults_to_dags_of_the_working_directory(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "dags").mkdir()

    assert reload_settings().resolved_dags_folder == tmp_path.resolve() / "dags"


def test_get_settings_reads_once(env: pytest.MonkeyPatch) -> None:
    first = get_settings()
    env.setenv("TRADEWIND_HEARTBEAT_SECONDS", "9")

    assert get_settings() is first
    assert get_settings().heartbeat_seconds == 5.0
    assert reload_settings().heartbeat_seconds == 9.0


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TRADEWIND_HEARTBEAT_SECONDS", "abc"),
        ("TRADEWIND_HEARTBEAT_SECONDS", "-1"),
        ("TRADEWIND_HEARTBEAT_SECONDS", "0"),
        ("TRADEWIND_ZOMBIE_THRESHOLD_SECONDS", "soon"),
        ("TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS", "-5"),
        ("TRADEWIND_STATE_STORE_MAX_VALUE_BYTES", "1.5"),
        ("TRADEWIND_XCOM_OBJECT_THRESHOLD_BYTES", "-1"),
        ("TRADEWIND_DATABASE_URL", "nonsense"),
        ("TRADEWIND_BROKER_URL", "localhost:6379"),
        ("TRADEWIND_OBJECT_STORAGE_URL", "bucket/prefix"),
        ("TRADEWIND_STATE_STORE_BACKEND", "s3"),
        ("TRADEWIND_TASK_PROCESS_REUSE", "0"),
        ("TRADEWIND_TASK_PROCESS_REUSE", "many"),
    ],
)
def test_a_bad_value_fails_with_one_line_naming_the_variable(
    env: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    env.setenv(variable, value)

    with pytest.raises(SettingsError) as caught:
        reload_settings()

    message = str(caught.value)
    assert message.startswith(f"{variable}: ")
    assert "\n" not in message
    assert repr(value) in message


def test_a_bad_number_says_what_is_accepted(env: pytest.MonkeyPatch) -> None:
    env.setenv("TRADEWIND_HEARTBEAT_SECONDS", "-1")

    with pytest.raises(SettingsError, match="greater than 0"):
        reload_settings()


def test_task_process_reuse_is_one_fresh_process_per_try_unless_set(
    env: pytest.MonkeyPatch,
) -> None:
    assert reload_settings().task_process_reuse == 1
    env.setenv("TRADEWIND_TASK_PROCESS_REUSE", "1000")
    assert reload_settings().task_process_reuse == 1000
    env.setenv("TRADEWIND_TASK_PROCESS_REUSE", "0")
    with pytest.raises(SettingsError, match="greater than or equal to 1"):
        reload_settings()


def test_a_bad_url_says_what_is_accepted(env: pytest.MonkeyPatch) -> None:
    env.setenv("TRADEWIND_DATABASE_URL", "nonsense")

    with pytest.raises(SettingsError, match=r"a URL with a scheme"):
        reload_settings()


def test_a_fixed_value_is_read_after_an_error(env: pytest.MonkeyPatch) -> None:
    env.setenv("TRADEWIND_HEARTBEAT_SECONDS", "abc")
    with pytest.raises(SettingsError):
        reload_settings()
    with pytest.raises(SettingsError):
        get_settings()  # a failure is not cached as if it were settings

    env.setenv("TRADEWIND_HEARTBEAT_SECONDS", "3")

    assert get_settings().heartbeat_seconds == 3.0


def test_the_api_servers_settings_and_their_defaults(env: pytest.MonkeyPatch) -> None:
    settings = get_settings()
    assert (settings.api_host, settings.api_port) == ("127.0.0.1", 8080)
    assert settings.api_token_lifetime_seconds == 86400
    assert settings.api_secret_key is None
    env.setenv("TRADEWIND_API_PORT", "9090")
    env.setenv("TRADEWIND_API_TOKEN_LIFETIME_SECONDS", "60")
    env.setenv("TRADEWIND_API_SECRET_KEY", "k" * 32)
    settings = reload_settings()
    assert (settings.api_port, settings.api_token_lifetime_seconds) == (9090, 60)


def test_the_api_servers_load_and_sign_in_settings(env: pytest.MonkeyPatch) -> None:
    settings = get_settings()
    assert (settings.api_max_concurrency, settings.api_queue_timeout_seconds) == (32, 10)
    assert (settings.api_login_max_failures, settings.api_login_window_seconds) == (10, 300)
    assert settings.api_cookie_secure is False
    env.setenv("TRADEWIND_API_MAX_CONCURRENCY", "8")
    env.setenv("TRADEWIND_API_COOKIE_SECURE", "true")
    settings = reload_settings()
    assert (settings.api_max_concurrency, settings.api_cookie_secure) == (8, True)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("API_PORT", "70000", "TRADEWIND_API_PORT: Input should be less than or equal to 65535"),
        ("API_PORT", "http", "TRADEWIND_API_PORT: Input should be a valid integer"),
        (
            "API_TOKEN_LIFETIME_SECONDS",
            "0",
            "TRADEWIND_API_TOKEN_LIFETIME_SECONDS: Input should be",
        ),
        ("API_HOST", "", "TRADEWIND_API_HOST: String should have at least 1 character"),
        ("API_MAX_CONCURRENCY", "0", "TRADEWIND_API_MAX_CONCURRENCY: Input should be greater"),
        ("API_QUEUE_TIMEOUT_SECONDS", "0", "TRADEWIND_API_QUEUE_TIMEOUT_SECONDS: Input should"),
        ("API_LOGIN_MAX_FAILURES", "0", "TRADEWIND_API_LOGIN_MAX_FAILURES: Input should be"),
        ("API_LOGIN_WINDOW_SECONDS", "-1", "TRADEWIND_API_LOGIN_WINDOW_SECONDS: Input should"),
        ("API_COOKIE_SECURE", "maybe", "TRADEWIND_API_COOKIE_SECURE: Input should be a valid"),
    ],
)
def test_a_bad_api_setting_is_one_line(
    env: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    env.setenv(f"TRADEWIND_{name}", value)
    with pytest.raises(SettingsError) as error:
        reload_settings()
    assert str(error.value).startswith(words)
    assert "\n" not in str(error.value)


def test_a_short_secret_key_is_refused_without_showing_it(env: pytest.MonkeyPatch) -> None:
    env.setenv("TRADEWIND_API_SECRET_KEY", "hunter2")
    with pytest.raises(SettingsError) as error:
        reload_settings()
    assert str(error.value) == (
        "TRADEWIND_API_SECRET_KEY: String should have at least 32 characters (got 7 characters)"
    )


def test_a_tasks_log_is_capped_per_line_and_per_try_unless_set(env: pytest.MonkeyPatch) -> None:
    settings = get_settings()
    assert (settings.task_log_line_max_bytes, settings.task_log_max_bytes) == (65536, 104857600)
    env.setenv("TRADEWIND_TASK_LOG_LINE_MAX_BYTES", "1048576")
    env.setenv("TRADEWIND_TASK_LOG_MAX_BYTES", "1073741824")
    settings = reload_settings()
    assert (settings.task_log_line_max_bytes, settings.task_log_max_bytes) == (2**20, 2**30)
    env.setenv("TRADEWIND_TASK_LOG_LINE_MAX_BYTES", "16")
    with pytest.raises(SettingsError) as error:
        reload_settings()
    assert str(error.value) == (
        "TRADEWIND_TASK_LOG_LINE_MAX_BYTES: Input should be greater than or equal to 1024 "
        "(got '16')"
    )
