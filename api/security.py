"""Passwords and tokens: argon2 hashes (pwdlib) and signed, expiring JWTs (PyJWT).

A token names its user (id, name and token version) and expires after
``TRADEWIND_API_TOKEN_LIFETIME_SECONDS``; it is signed with ``TRADEWIND_API_SECRET_KEY``
(HS256), which every API server of a fleet must share. Unset, a key is generated once and kept
in ``TRADEWIND_HOME/api_secret_key`` (mode 0600), so a standalone's tokens outlive a restart.
Nothing but who it is is trusted from a token: each request reads the user's row by id and
compares the version, so a deletion, a new role, a new password or a sign-out ends it at once.

Hashing runs on an executor of its own (``hash_off_loop``, ``check_off_loop``): argon2 costs
tens of milliseconds of CPU on purpose, and on the request threads' pool a burst of sign-ins
left no thread for anything else (health checks took 20-33 s).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jwt
from pwdlib import PasswordHash

from tradewind.settings import Settings

_HASHER = PasswordHash.recommended()  # argon2id with the library's current parameters
_ALGORITHM = "HS256"
SECRET_KEY_FILE = "api_secret_key"


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(password: str, password_hash: str) -> bool:
    return _HASHER.verify(password, password_hash)


#: Verified against when the user does not exist, so an unknown name costs as long as a known one.
_DUMMY_HASH = hash_password(secrets.token_urlsafe(16))


def check_password(password: str, password_hash: str | None) -> bool:
    """Whether ``password`` matches; a missing user (None) spends the same time and fails."""
    if password_hash is None:
        verify_password(password, _DUMMY_HASH)
        return False
    return verify_password(password, password_hash)


#: argon2 uses a core while it hashes: more threads than cores would only queue inside the CPU.
_HASHING = ThreadPoolExecutor(
    max_workers=max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="password-hashing"
)


async def hash_off_loop(password: str) -> str:
    """``hash_password`` on the hashing executor (neither the event loop nor a request thread)."""
    return await asyncio.get_running_loop().run_in_executor(_HASHING, hash_password, password)


async def check_off_loop(password: str, password_hash: str | None) -> bool:
    """``check_password`` on the hashing executor."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_HASHING, check_password, password, password_hash)


def secret_key(settings: Settings) -> str:
    """``TRADEWIND_API_SECRET_KEY``, or the key kept under ``TRADEWIND_HOME`` (made once)."""
    if settings.api_secret_key:
        return settings.api_secret_key
    path = settings.resolved_home / SECRET_KEY_FILE
    if not path.is_file():
        _write_private(path, secrets.token_urlsafe(48))
    return path.read_text().strip()


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` readable by its owner only; a racing writer's file is kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(descriptor, "w") as out:
        out.write(text)


class InvalidToken(ValueError):
    """A token that is malformed, not signed by this fleet's key, or expired."""


@dataclass(frozen=True)
class TokenHolder:
    """Whom a token names: the user's id and name, and the token version it was issued at."""

    user_id: int
    username: str
    version: int


@dataclass(frozen=True)
class Tokens:
    """Issues and reads the API's bearer tokens."""

    key: str
    lifetime: dt.timedelta

    def issue(self, holder: TokenHolder) -> str:
        now = dt.datetime.now(dt.UTC)
        claims = {
            "sub": holder.username,
            "uid": holder.user_id,
            "ver": holder.version,
            "iat": now,
            "nbf": now,
            "exp": now + self.lifetime,
        }
        return jwt.encode(claims, self.key, algorithm=_ALGORITHM)

    def holder(self, token: str) -> TokenHolder:
        """Whom a token names; ``InvalidToken`` unless it is valid now."""
        try:
            claims = jwt.decode(
                token, self.key, algorithms=[_ALGORITHM], options={"require": _REQUIRED}
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken(
                "the token has expired: get a new one from POST /auth/token"
            ) from None
        except jwt.InvalidTokenError as error:
            raise InvalidToken(f"invalid token: {error}") from None
        user_id, version = claims["uid"], claims["ver"]
        if not isinstance(user_id, int) or not isinstance(version, int):
            raise InvalidToken("invalid token: its user id and version must be integers")
        return TokenHolder(user_id, str(claims["sub"]), version)


#: Claims a token must carry: one from before versions (a name alone) is refused.
_REQUIRED = ["exp", "sub", "uid", "ver"]
