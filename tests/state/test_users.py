"""The API server's users in the store: roles ordered by their rights, names unique."""

from __future__ import annotations

import pytest

from state.core.db import session_scope
from state.records.users import (
    NoSuchUser,
    Role,
    UserExists,
    count_users,
    create_user,
    delete_user,
    get_user,
    list_users,
    set_password_hash,
)
from tests.state.harness import Home


def test_each_role_has_the_rights_of_those_before_it() -> None:
    assert [role.value for role in Role] == ["viewer", "user", "op", "admin"]
    assert Role.ADMIN.may(Role.OP) and Role.OP.may(Role.USER) and Role.USER.may(Role.VIEWER)
    assert not Role.VIEWER.may(Role.USER)
    assert not Role.OP.may(Role.ADMIN)


def test_users_are_created_found_listed_and_deleted(home: Home) -> None:
    with session_scope(home.url) as session:
        create_user(session, "bo", "hash-b", Role.OP)
        create_user(session, "ana", "hash-a", Role.VIEWER)
    with session_scope(home.url) as session:
        with pytest.raises(UserExists, match="a user named 'ana' already exists"):
            create_user(session, "ana", "other", Role.ADMIN)
        assert [u.username for u in list_users(session)] == ["ana", "bo"]  # the session goes on
        set_password_hash(session, "bo", "hash-c")
    with session_scope(home.url) as session:
        assert get_user(session, "bo").password_hash == "hash-c"  # type: ignore[union-attr]
        delete_user(session, "bo")
        with pytest.raises(NoSuchUser):
            delete_user(session, "bo")
        assert count_users(session) == 1
