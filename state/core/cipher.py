"""Secrets at rest: connection passwords, extras and variables sealed with the operator's key.

The keys are ``TRADEWIND_FERNET_KEY`` (comma-separated: the first encrypts, every one decrypts,
so a new key can be put first while values sealed with the old one stay readable), else the key
``tradewind standalone`` made under ``TRADEWIND_HOME``, else none: values are then stored in
plaintext and the first one written says so in one warning line. A stored value carries a flag
saying whether it is sealed, so plaintext rows from before a key was set stay readable until
``tradewind rotate-fernet-key`` seals them.

A value that no configured key opens is a ``SecretUnreadable``: one line naming the connection or
variable, never the value nor a traceback.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from tradewind.settings import get_settings, is_fernet_key

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Said once per process, at the first value stored in plaintext.
NO_KEY_WARNING = (
    "TRADEWIND_FERNET_KEY is not set: connection passwords, extras and variables are stored in "
    "plaintext (docs/security.md, 'Secrets at rest')"
)


class SecretUnreadable(ValueError):
    """A stored secret that no configured key decrypts (or a key that cannot be used)."""


class Cipher:
    """Seals and opens stored secrets with one process's keys (none: plaintext)."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        fernets = [Fernet(key.encode("ascii")) for key in keys]
        self._first = fernets[0] if fernets else None
        self._all = MultiFernet(fernets) if fernets else None

    @property
    def has_key(self) -> bool:
        return self._first is not None

    def seal(self, text: str) -> tuple[str, bool]:
        """``text`` as stored, and whether it is encrypted."""
        if self._first is None:
            _warn_once()
            return text, False
        return self._first.encrypt(text.encode("utf-8")).decode("ascii"), True

    def open(self, stored: str, encrypted: bool, what: str) -> str:
        """The text of a stored value; ``what`` names it in the error ("connection 'db'")."""
        if not encrypted:
            return stored
        if self._all is None:
            raise SecretUnreadable(
                f"{what} is encrypted and TRADEWIND_FERNET_KEY is not set: set the key it was "
                "encrypted with"
            )
        try:
            return self._all.decrypt(stored.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise SecretUnreadable(_not_opened(what)) from None

    def reseal(self, stored: str, encrypted: bool, what: str) -> str | None:
        """``stored`` encrypted with the first key; None when it already is (nothing to write)."""
        if self._first is None or self._all is None:
            raise SecretUnreadable("TRADEWIND_FERNET_KEY is not set: no key to encrypt with")
        if not encrypted:
            return self.seal(stored)[0]
        token = stored.encode("ascii")
        try:
            self._first.decrypt(token)
            return None
        except InvalidToken:
            pass  # sealed with another key: rotated below, or unreadable
        try:
            return self._all.rotate(token).decode("ascii")
        except InvalidToken:
            raise SecretUnreadable(_not_opened(what)) from None


class Sealed(Generic[T]):
    """A model attribute whose value is kept sealed in another column, beside a flag column.

    ``row.password`` reads the plain value and ``row.password = text`` stores it sealed with the
    process's first key; ``row.stored_password`` is what the database holds. ``name`` names the
    value in errors, formatted with the row (``"connection {0.conn_id!r}'s password"``). A JSON
    value (a connection's extra) is sealed as its JSON text; an empty one is stored as it is.
    """

    def __init__(self, column: str, flag: str, name: str, as_json: bool = False) -> None:
        self.column, self.flag, self.name, self.as_json = column, flag, name, as_json

    @overload
    def __get__(self, row: None, owner: type[Any]) -> Sealed[T]: ...
    @overload
    def __get__(self, row: object, owner: type[Any]) -> T: ...
    def __get__(self, row: object | None, owner: type[Any]) -> Sealed[T] | T:
        if row is None:
            return self
        stored = getattr(row, self.column)
        value: Any = stored
        if stored is None:
            value = {} if self.as_json else None
        elif getattr(row, self.flag):
            text = current_cipher().open(stored, True, self.name.format(row))
            value = json.loads(text) if self.as_json else text
        return cast(T, value)

    def __set__(self, row: object, value: T) -> None:
        stored: Any = value
        encrypted = False
        if value is not None and not (self.as_json and not value):
            text = json.dumps(value) if self.as_json else str(value)
            sealed, encrypted = current_cipher().seal(text)
            if encrypted or not self.as_json:
                stored = sealed
        setattr(row, self.column, stored)
        setattr(row, self.flag, encrypted)


def _not_opened(what: str) -> str:
    return (
        f"{what} cannot be decrypted with any key of TRADEWIND_FERNET_KEY: it was encrypted "
        "with a key no longer configured (add that key back, after the first)"
    )


@functools.cache
def _warn_once() -> None:
    log.warning(NO_KEY_WARNING)


def current_cipher() -> Cipher:
    """The cipher of this process's settings (read again after ``reload_settings``)."""
    settings = get_settings()
    return _cipher(settings.fernet_keys, settings.fernet_key_file)


def forget_keys() -> None:
    """Read the keys again at the next use (after a key file is made)."""
    _cipher.cache_clear()


@functools.lru_cache(maxsize=8)
def _cipher(keys: tuple[str, ...], key_file: Path) -> Cipher:
    if not keys and key_file.is_file():
        keys = (_read_key_file(key_file),)
    return Cipher(keys)


def _read_key_file(path: Path) -> str:
    key = path.read_text().strip()
    if not is_fernet_key(key):
        raise SecretUnreadable(f"{path} does not hold a Fernet key: delete it or fix it")
    return key
