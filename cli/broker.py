"""``tradewind broker dead-letters [--json] [--purge]``: the entries the broker could not decode.

Register on the top-level app: ``app.add_typer(broker.app, name="broker")``
(cli/main.py). The transports keep what they refuse (broker_config.dead_letters); this
shows it, oldest first, and with ``--purge`` removes what it showed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit

if TYPE_CHECKING:
    from broker_config.dead_letters import DeadLetter

app = typer.Typer(help="Look at the broker.", no_args_is_help=True)


@app.command("dead-letters")
def dead_letters(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (each entry in base64) instead of lines.")
    ] = False,
    purge: Annotated[bool, typer.Option("--purge", help="Remove the dead letters listed.")] = False,
) -> None:
    """List the entries the broker's transport refused, with the reason and the time."""
    # Imported here: redis and kombu are a third of a second of every other command's start.
    import redis

    from broker_config.dead_letters import NoDeadLetters, dead_letters_of

    settings = settings_or_exit()
    try:
        store = dead_letters_of(settings.broker, settings.broker_folder)
        letters = store.purge() if purge else store.all()
    except NoDeadLetters as error:
        fail(str(error), EXIT_BAD_INPUT)
    except redis.RedisError as error:
        fail(f"cannot read the dead letters from {settings.broker}: {error}")
    if as_json:
        typer.echo(json.dumps([letter.to_json() for letter in letters], indent=2))
    else:
        for letter in letters:
            typer.echo(_line(letter))
        verb = "purged" if purge else "found"
        typer.echo(f"{verb} {len(letters)} dead letter{'s' if len(letters) != 1 else ''}")


def _line(letter: DeadLetter) -> str:
    at = letter.at.isoformat(timespec="seconds")
    return f"{at}  {letter.queue}  {letter.size_bytes} bytes  {letter.reason}  {letter.preview()}"
