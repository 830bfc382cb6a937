"""``tradewind rotate-fernet-key``: every stored secret encrypted with the first Fernet key.

Rotating a key: put the new key first in ``TRADEWIND_FERNET_KEY`` (``new,old``: every process
then encrypts with the new one and still reads the old), run this, then drop the old key. The
same command encrypts the plaintext rows written before any key was set. Each row is resealed
under its own lock and committed in batches, so a crash leaves every row readable with the keys
configured, and a rerun goes on where the last one stopped (rows already under the first key are
counted, not rewritten).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from cli.store import open_store
from state.core import SecretUnreadable, current_cipher, session_scope
from state.records import (
    Resealed,
    connection_ids,
    reseal_connection,
    reseal_variable,
    variable_keys,
)

#: Rows resealed in one transaction (and between two lines of progress).
BATCH = 100

Reseal = Callable[..., Resealed]


def rotate_fernet_key(
    generate: Annotated[
        bool, typer.Option("--generate", help="Print a new Fernet key and exit (changes nothing).")
    ] = False,
) -> None:
    """Re-encrypt every connection password, extra and variable with the first Fernet key."""
    if generate:
        from cryptography.fernet import Fernet

        typer.echo(Fernet.generate_key().decode())
        return
    settings = settings_or_exit()
    try:
        has_key = current_cipher().has_key
    except SecretUnreadable as error:  # the key file of a standalone is damaged
        fail(str(error), EXIT_BAD_INPUT)
    if not has_key:
        fail(
            "TRADEWIND_FERNET_KEY is not set: set it (new key first, old ones after) and run "
            "this again; `tradewind rotate-fernet-key --generate` prints a new key",
            EXIT_BAD_INPUT,
        )
    url = open_store(settings)
    with session_scope(url) as session:
        ids, keys = connection_ids(session), variable_keys(session)
    failed = _rotate(url, "connections", ids, reseal_connection)
    failed += _rotate(url, "variables", keys, reseal_variable)
    if failed:
        rows = "row" if failed == 1 else "rows"
        fail(f"{failed} {rows} could not be decrypted (named above) and were left as they were")


def _rotate(url: str, kind: str, names: list[str], reseal: Reseal) -> int:
    """Reseal every row of ``names``, a line of progress per batch; returns how many failed."""
    counts = {"resealed": 0, "current": 0, "gone": 0}
    failed = 0
    for start in range(0, len(names), BATCH):
        with session_scope(url) as session:
            for name in names[start : start + BATCH]:
                try:
                    counts[reseal(session, name)] += 1
                except SecretUnreadable as error:
                    typer.echo(f"error: {error}", err=True)
                    failed += 1
        done = min(start + BATCH, len(names))
        typer.echo(f"{kind}: {done}/{len(names)}")
    typer.echo(
        f"{kind}: {counts['resealed']} encrypted with the first key, {counts['current']} "
        f"already were" + (f", {failed} unreadable" if failed else "")
    )
    return failed
