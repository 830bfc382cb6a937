"""The one settings object: every ``TRADEWIND_*`` variable, read once and validated.

A bad value must stop a command at start with one line naming the variable and what it
accepts, never surface later as a confusing failure deep inside a worker.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "TRADEWIND_"
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


class SettingsError(ValueError):
    """A ``TRADEWIND_*`` variable holds a value that cannot be used."""


class Settings(BaseSettings):
    """Tradewind's configuration, from ``TRADEWIND_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    home: Path = Path(".tradewind")
    database_url: str | None = None
    broker_url: str | None = None
    dags_folder: Path | None = None
    xcom_backend: str = "sql"
    object_storage_url: str | None = None
    # A Connection holding the object store's credentials (for s3://: key, secret, endpoint).
    object_storage_conn_id: str | None = None
    xcom_object_threshold_bytes: int = Field(default=65536, ge=0)
    # Where state values over TRADEWIND_STATE_STORE_MAX_VALUE_BYTES go: refused past what the
    # database takes (sql), or to TRADEWIND_OBJECT_STORAGE_URL (object_storage).
    state_store_backend: Literal["sql", "object_storage"] = "sql"
    state_store_max_value_bytes: int = Field(default=65536, gt=0)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    zombie_threshold_seconds: float = Field(default=30.0, gt=0)
    task_queued_timeout_seconds: float = Field(default=60.0, gt=0)
    # How many times a queued message that never started is re-sent before the try is failed.
    max_queued_resends: int = Field(default=3, ge=0)
    # How many deliveries of one try (a task that keeps killing its worker) before it is failed.
    max_deliveries: int = Field(default=3, ge=1)
    scheduler_interval_seconds: float = Field(default=1.0, gt=0)
    # Every long-running component (scheduler, worker, triggerer, API server) beats its `job`
    # row this often; one whose last beat is older than the threshold reads as unhealthy
    # (/api/v2/monitor/health, `tradewind jobs check`, the UI's home: state/records/jobs.py).
    job_heartbeat_seconds: float = Field(default=5.0, gt=0)
    job_health_threshold_seconds: float = Field(default=30.0, gt=0)
    # The triggerer (docs/triggerer.md): how many triggers one runs at once (Airflow's
    # triggerer capacity).
    triggerer_capacity: int = Field(default=1000, gt=0)
    # DAG files are imported in child processes (tradewind/dag_processor.py, docs/dag-folders.md):
    # seconds one file may take (Airflow's dag_file_processor_timeout), the child's address space
    # in MiB (0: no limit), and how many children import at once.
    dag_file_processor_timeout: float = Field(default=50.0, gt=0)
    dag_file_processor_memory_mb: int = Field(default=2048, ge=0)
    dag_file_processor_processes: int = Field(default=2, ge=1)
    remote_logs_url: str | None = None
    # History older than this many days (ended runs with their rows and logs, asset events, the
    # event log) is deleted by the scheduler, a batch at a time (state/records/history.py).
    # Unset: everything is kept; `tradewind db clean` deletes by hand.
    history_retention_days: float | None = Field(default=None, gt=0)
    # A task's output (worker/supervisor/logs.py): a longer line is written in pieces of this
    # size, and past this much a try's log drops the task's further lines (counted at its end).
    task_log_line_max_bytes: int = Field(default=64 * 1024, ge=1024)
    task_log_max_bytes: int = Field(default=100 * 1024 * 1024, ge=64 * 1024)
    # Seconds between SIGTERM and SIGKILL when a task is stopped.
    kill_grace_seconds: float = Field(default=5.0, ge=0)
    # How many tries of Python tasks one task process may run, one after another (DESIGN.md §7,
    # docs/operations.md): 1, the default, is a fresh process per try.
    task_process_reuse: int = Field(default=1, ge=1)
    # How long a try may wait for its task process to be handed over by its slot's fork server
    # (docs/operations.md): past it the try fails with the reason, and the stuck server goes.
    task_start_timeout_seconds: float = Field(default=120.0, gt=0)
    # A `task-sent` event per published try, what Flower shows as queued (docs/operations.md).
    task_sent_events: bool = True
    # The API server (api/). The key signs its tokens and session cookies: every server of one
    # fleet needs the same one. Unset, one is generated and kept under TRADEWIND_HOME.
    api_secret_key: str | None = Field(default=None, min_length=32)
    # Fernet keys (comma-separated: the first encrypts, every one decrypts) for connection
    # passwords, extras and variables at rest (state/core/cipher.py). Unset: the key
    # `tradewind standalone` keeps under TRADEWIND_HOME, if there is one, else plaintext.
    fernet_key: str | None = None
    api_token_lifetime_seconds: float = Field(default=86400.0, gt=0)
    api_host: str = Field(default="127.0.0.1", min_length=1)
    api_port: int = Field(default=8080, ge=1, le=65535)
    # What a DAG file's `airflow.*` imports are in Tradewind's processes: Tradewind's own names
    # (tradewind/airflow_paths), or Airflow's, when apache-airflow is installed and wanted.
    airflow_imports: Literal["tradewind", "airflow"] = "tradewind"
    # A request body above this is refused (413) before it is read whole.
    api_max_body_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    # How many requests one API server works on at once; its threads and its store connections
    # are sized from it (api/concurrency.py). Twice as many more wait, at most the queue
    # seconds each; past that a request is answered 503 with Retry-After at once.
    api_max_concurrency: int = Field(default=32, ge=1, le=1000)
    api_queue_timeout_seconds: float = Field(default=10.0, gt=0)
    # Sign-in throttling: after this many failed sign-ins of one user, or from one client,
    # within the window, more attempts are answered 429 with Retry-After (api/throttle.py).
    api_login_max_failures: int = Field(default=10, ge=1)
    api_login_window_seconds: float = Field(default=300.0, gt=0)
    # The session cookie's Secure flag: set it when browsers reach the server over HTTPS.
    api_cookie_secure: bool = False
    # Where the links of alert emails point (the API server's pages): http://api_host:api_port
    # when unset.
    api_base_url: str | None = None
    # Email (tradewind/emails.py), Airflow's [smtp] section: the connection a task's alerts and
    # EmailOperator use, and the server and sender used where that connection does not say.
    smtp_conn_id: str = Field(default="smtp_default", min_length=1)
    smtp_host: str = Field(default="localhost", min_length=1)
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_starttls: bool = True
    smtp_ssl: bool = False
    smtp_timeout_seconds: float = Field(default=30.0, gt=0)
    smtp_retry_limit: int = Field(default=5, ge=0)
    smtp_mail_from: str = Field(default="tradewind@example.com", min_length=3)
    # Metrics (docs/metrics.md): /metrics on the API server, fed by every process through the
    # store every flush interval. The scrape token lets Prometheus in with
    # `Authorization: Bearer <token>` (users' tokens work too, and expire); no anonymous scrape.
    metrics_enabled: bool = True
    metrics_flush_seconds: float = Field(default=5.0, gt=0)
    metrics_token: str | None = Field(default=None, min_length=16)

    @field_validator(
        "database_url", "broker_url", "object_storage_url", "remote_logs_url", "api_base_url"
    )
    @classmethod
    def _url_has_scheme(cls, value: str | None) -> str | None:
        if value is not None and "://" not in value:
            raise ValueError("a URL with a scheme, such as redis://host:6379/0")
        return value

    @field_validator("fernet_key")
    @classmethod
    def _fernet_keys(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        for number, key in enumerate(value.split(","), start=1):
            if not is_fernet_key(key.strip()):
                raise ValueError(
                    f"key {number} is not a Fernet key (32 bytes in URL-safe base64, 44 "
                    "characters; make one with `tradewind rotate-fernet-key --generate`)"
                )
        return value

    @model_validator(mode="after")
    def _threshold_outlasts_a_beat(self) -> Settings:
        # A threshold no longer than the interval would read every healthy job as unhealthy.
        if self.job_health_threshold_seconds <= self.job_heartbeat_seconds:
            raise ValueError(
                "TRADEWIND_JOB_HEALTH_THRESHOLD_SECONDS must be greater than "
                "TRADEWIND_JOB_HEARTBEAT_SECONDS"
            )
        return self

    @property
    def job_health_threshold(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.job_health_threshold_seconds)

    @model_validator(mode="after")
    def _object_storage_has_a_url(self) -> Settings:
        if self.state_store_backend == "object_storage" and not self.object_storage_url:
            raise ValueError(needs_object_storage_url("TRADEWIND_STATE_STORE_BACKEND"))
        return self

    @property
    def resolved_home(self) -> Path:
        return self.home.expanduser().resolve()

    @property
    def fernet_keys(self) -> tuple[str, ...]:
        """``TRADEWIND_FERNET_KEY``'s keys, first the one that encrypts; empty when unset."""
        if self.fernet_key is None:
            return ()
        return tuple(key.strip() for key in self.fernet_key.split(","))

    @property
    def fernet_key_file(self) -> Path:
        """Where ``tradewind standalone`` keeps the key it made (mode 0600)."""
        return self.resolved_home / "fernet_key"

    @property
    def sql_url(self) -> str:
        """The SQL store: the configured URL, or a SQLite file under ``TRADEWIND_HOME``."""
        return self.database_url or f"sqlite:///{self.resolved_home / 'tradewind.db'}"

    @property
    def public_url(self) -> str:
        """The API server's address as a reader of an email reaches it."""
        return (self.api_base_url or f"http://{self.api_host}:{self.api_port}").rstrip("/")

    @property
    def broker(self) -> str:
        """The broker: the configured URL, or kombu's filesystem transport (see broker_config)."""
        # A hostname, though kombu ignores it, keeps kombu from warning on every connection.
        return self.broker_url or "filesystem://localhost/"

    @property
    def broker_folder(self) -> Path:
        """Where the embedded filesystem broker keeps its messages."""
        return self.resolved_home / "broker"

    @property
    def logs_folder(self) -> Path:
        return self.resolved_home / "logs"

    @property
    def resolved_dags_folder(self) -> Path:
        """``TRADEWIND_DAGS_FOLDER``, else ``./dags``, else the bundled examples (for the demo)."""
        if self.dags_folder is not None:
            return self.dags_folder.expanduser().resolve()
        for candidate in (Path("dags"), Path("examples/dags"), _PROJECT_ROOT / "examples" / "dags"):
            if candidate.is_dir():
                return candidate.resolve()
        return Path("dags").resolve()


def log_path(
    logs_folder: Path, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int
) -> Path:
    """Where one try's log is written (by its supervisor) and read (by the CLI and the API)."""
    safe_run = run_id.replace("/", "_").replace(":", "_")
    return logs_folder / dag_id / safe_run / task_id / str(map_index) / f"{try_number}.log"


def is_fernet_key(text: str) -> bool:
    """Whether ``text`` is a Fernet key: 32 bytes in URL-safe base64 (43 characters and ``=``)."""
    return re.fullmatch(r"[A-Za-z0-9_-]{43}=", text) is not None


def needs_object_storage_url(variable: str) -> str:
    """The error of ``variable=object_storage`` without ``TRADEWIND_OBJECT_STORAGE_URL``."""
    return (
        f"{variable}=object_storage needs TRADEWIND_OBJECT_STORAGE_URL "
        "(an fsspec URL such as s3://bucket/prefix or file:///path)"
    )


def _one_line(error: ValidationError) -> str:
    first = error.errors()[0]
    if not first["loc"]:  # a rule between variables: its message names them
        return str(first.get("ctx", {}).get("error", first["msg"]))
    field = str(first["loc"][0])
    name = ENV_PREFIX + field.upper()
    if field in SECRET_FIELDS:  # the message must not show the secret it refuses
        return f"{name}: {first['msg']} (got {len(str(first.get('input')))} characters)"
    return f"{name}: {first['msg']} (got {first.get('input')!r})"


#: Settings whose values a message never shows.
SECRET_FIELDS = frozenset({"api_secret_key", "fernet_key"})


@functools.cache
def get_settings() -> Settings:
    """The settings of this process, read from the environment on first use."""
    try:
        return Settings()
    except ValidationError as error:
        raise SettingsError(_one_line(error)) from None


def reload_settings() -> Settings:
    """Read the environment again (tests and the CLI, after setting variables)."""
    get_settings.cache_clear()
    return get_settings()
