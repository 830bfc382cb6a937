"""The users of the API server and their roles, in the SQL store.

Roles are ordered: each has every right of the roles before it (viewer reads; user also
triggers, clears and marks; op also edits pools, variables and connections; admin also manages
users). Only a hash of a password is stored; hashing is the caller's (``api.security``), so this
module stays free of any crypto library.

A user's ``token_version`` is what their tokens and session cookies must name to be honoured:
a new password, a new role and ``revoke_tokens`` (a sign-out) raise it, so every token and
cookie issued before stops working at once, on every API server of the fleet.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from state.core import User


class Role(StrEnum):
    VIEWER = "viewer"
    USER = "user"
    OP = "op"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(Role).index(self)

    def may(self, needed: Role) -> bool:
        """Whether this role has the rights of ``needed`` (its own and every lower role's)."""
        return self.rank >= needed.rank


class UserExists(ValueError):
    """A user with that name already exists."""


class NoSuchUser(LookupError):
    """No user with that name exists."""


def create_user(session: Session, username: str, password_hash: str, role: Role) -> User:
    user = User(username=username, password_hash=password_hash, role=str(role))
    try:
        with session.begin_nested():
            session.add(user)
            session.flush()
    except IntegrityError:
        raise UserExists(f"a user named {username!r} already exists") from None
    return user


def get_user(session: Session, username: str) -> User | None:
    return session.scalars(select(User).where(User.username == username)).first()


def get_user_by_id(session: Session, user_id: int) -> User | None:
    return session.get(User, user_id)


def set_password_hash(session: Session, username: str, password_hash: str) -> None:
    """Change the password; every token and session of the user ends."""
    user = get_user(session, username)
    if user is None:
        raise NoSuchUser(f"no user named {username!r}")
    user.password_hash = password_hash
    user.token_version += 1


def revoke_tokens(session: Session, user_id: int, version: int) -> None:
    """End every token and session cookie of the user issued at ``version`` (a sign-out).

    A stale cookie (of a version already ended, or of a deleted user) changes nothing: only a
    sign-in that still holds may end the user's others.
    """
    query = update(User).where(User.id == user_id, User.token_version == version)
    session.execute(query.values(token_version=User.token_version + 1))


#: The most users a listing returns (every list query is bounded).
MAX_USERS_LISTED = 10_000


def list_users(session: Session) -> list[User]:
    query = select(User).order_by(User.username).limit(MAX_USERS_LISTED)
    return list(session.scalars(query))


def count_users(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(User)) or 0


def delete_user(session: Session, username: str) -> None:
    result = session.execute(delete(User).where(User.username == username))
    if not result.rowcount:  # type: ignore[attr-defined]
        raise NoSuchUser(f"no user named {username!r}")


def set_role(session: Session, username: str, role: Role) -> None:
    """Give the user ``role``; a change ends every token and session they hold."""
    user = get_user(session, username)
    if user is None:
        raise NoSuchUser(f"no user named {username!r}")
    if user.role != str(role):
        user.role = str(role)
        user.token_version += 1


def list_users_page(session: Session, limit: int, offset: int) -> tuple[list[User], int]:
    """One page of users by name, and how many there are (two statements)."""
    query = select(User).order_by(User.username).limit(max(limit, 0)).offset(max(offset, 0))
    return list(session.scalars(query)), count_users(session)
