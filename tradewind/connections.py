"""``Connection`` and ``Variable``: what a task (or an XCom backend) looks up by name.

Inside a task both go through the supervisor, which reads the SQL store and masks the secret
(the password; a Variable marked secret or named like one) in every later line of the try's log.
Names follow Airflow's ``airflow.sdk``: ``Connection.get(conn_id)``, ``Variable.get(key)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from tradewind.context import get_current_context
from tradewind.spellings import airflow2_spelling

_MISSING: Any = object()
#: Names that hold secrets: a Variable's key, a key of a Connection's ``extra`` (Airflow masks
#: the same names). The API hides their values and the supervisor masks them in task logs.
SENSITIVE_WORDS = (
    "password",
    "secret",
    "passwd",
    "passphrase",
    "token",
    "api_key",
    "apikey",
    "private_key",
    "authorization",
    "keyfile_dict",
    "service_account",
)


def is_sensitive(key: str) -> bool:
    return any(word in key.lower() for word in SENSITIVE_WORDS)


def sensitive_values(extra: Any, under_sensitive: bool = False) -> Iterator[str]:
    """Every value of ``extra`` held under a sensitive key, at any depth, as text.

    A nested ``{"auth": {"api_token": ...}}`` counts, and so does every leaf under a sensitive
    key (``{"credentials_secret": {"a": ..., "b": [...]}}``). Booleans and None are no secret.
    """
    if isinstance(extra, dict):
        for key, value in extra.items():
            yield from sensitive_values(value, under_sensitive or is_sensitive(str(key)))
    elif isinstance(extra, list | tuple):
        for value in extra:
            yield from sensitive_values(value, under_sensitive)
    elif under_sensitive and isinstance(extra, str | int | float) and not isinstance(extra, bool):
        yield str(extra)


@dataclass(frozen=True)
class Connection:
    """How to reach an external system; ``repr`` never shows the password."""

    conn_id: str
    conn_type: str = "generic"
    host: str | None = None
    login: str | None = None
    password: str | None = field(default=None, repr=False)
    schema: str | None = None
    port: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def get(cls, conn_id: str) -> Connection:
        """The connection ``conn_id``, from inside a running task."""
        connection: Connection = _client().get_connection(conn_id)
        return connection

    @classmethod
    def from_uri(cls, conn_id: str, uri: str) -> Connection:
        """``type://login:password@host:port/schema?extra_key=value`` as a Connection."""
        parts = urlsplit(uri)
        if not parts.scheme:
            raise ValueError(f"connection URI {uri!r} has no scheme (the connection type)")
        return cls(
            conn_id=conn_id,
            conn_type=parts.scheme.replace("-", "_"),
            host=unquote(parts.hostname) if parts.hostname else None,
            login=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            schema=unquote(parts.path.lstrip("/")) or None,
            port=parts.port,
            extra=dict(parse_qsl(parts.query)),
        )

    @classmethod
    def get_connection_from_secrets(cls, conn_id: str) -> Connection:
        """Airflow's name for ``Connection.get``."""
        return cls.get(conn_id)

    @property
    def id(self) -> str:
        return self.conn_id

    @property
    def extra_dejson(self) -> dict[str, Any]:
        """The extras as a dictionary (Airflow keeps them as JSON text; Tradewind as a dict)."""
        return dict(self.extra)

    def get_extra(self) -> str:
        """The extras as JSON text, as Airflow's ``Connection.extra`` is."""
        return json.dumps(self.extra)

    def get_password(self) -> str | None:
        return self.password

    def get_hook(self, *, hook_params: dict[str, Any] | None = None) -> Any:
        """An instance of the hook the installed providers register for this connection's type.

        ``conn_type`` ``postgres`` gives a ``PostgresHook`` on this connection (its id passed as
        the hook's connection id argument), read from the providers' entry points.
        """
        from tradewind.providers.hooks import hook_for

        return hook_for(self, hook_params or {})

    def get_uri(self) -> str:
        """The connection as one URI (password included: never log it)."""
        auth = ""
        if self.login or self.password:
            auth = quote(self.login or "", safe="")
            auth += f":{quote(self.password, safe='')}" if self.password else ""
            auth += "@"
        port = f":{self.port}" if self.port is not None else ""
        path = f"/{quote(self.schema, safe='')}" if self.schema else ""
        query = f"?{urlencode(self.extra)}" if self.extra else ""
        return f"{self.conn_type.replace('_', '-')}://{auth}{self.host or ''}{port}{path}{query}"


class Variable:
    """A named string value (JSON when asked), shared by every task."""

    @staticmethod
    def get(
        key: str, default: Any = _MISSING, deserialize_json: bool = False, **airflow2: Any
    ) -> Any:
        """The value of ``key``; ``default`` if it is not set, or ``KeyError`` without one.

        Airflow 2 named the default ``default_var``: accepted, and noted.
        """
        if "default_var" in airflow2:
            airflow2_spelling("Variable.get(default_var=...)", "Variable.get(default=...)")
            default = airflow2.pop("default_var")
        if airflow2:
            raise TypeError(f"Variable.get() got an unexpected argument {next(iter(airflow2))!r}")
        value: str | None = _client().get_variable(key)
        if value is None:
            if default is _MISSING:
                raise KeyError(f"variable {key!r} is not set")
            return default
        return json.loads(value) if deserialize_json else value


def mask_secret(value: str) -> None:
    """Have the supervisor mask ``value`` in every later line of this try's log."""
    _client().mask_secret(value)


def _client() -> Any:
    """The running task's supervisor; outside a task, the triggerer's store (its triggers)."""
    try:
        return get_current_context()["ti"].client
    except RuntimeError:
        from tradewind.triggers.services import lookups

        found = lookups()
        if found is not None:
            return found
        raise RuntimeError(
            "Connection.get() and Variable.get() work inside a running task or a trigger: the "
            "supervisor or the triggerer looks them up"
        ) from None
