"""The password hash of the fixtures' users: argon2id at its smallest cost, made once per process.

The product hashes with pwdlib's recommended parameters (64 MiB, 3 passes: about half a second of
a core, on purpose) and checks a hash with the parameters written in it. The fixtures' users need
only a hash the product accepts: at the smallest cost, each sign-in of a test is checked in a
millisecond instead of a second of CPU, over hundreds of tests. What ``hash_password`` makes is
still what users created through the CLI, the API and the pages get, and their tests sign in
with those (tests/cli/test_users.py checks the hash is argon2id).
"""

from __future__ import annotations

from functools import cache

from pwdlib.hashers.argon2 import Argon2Hasher

_CHEAPEST = Argon2Hasher(time_cost=1, memory_cost=1024, parallelism=1)


@cache
def fixture_password_hash(password: str) -> str:
    """An argon2id hash of ``password`` that ``api.security.verify_password`` accepts, cheaply."""
    return _CHEAPEST.hash(password)
