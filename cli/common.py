"""What every command shares: the settings, one-line errors, logging and ``--conf`` parsing.

A user's mistake ends a command with one ``error: ...`` line on stderr and an exit code, never
a traceback: 2 for bad input (a setting, a flag value), 1 for a request that cannot be done.
"""

from __future__ import annotations

import json
import logging
from typing import Any, NoReturn

import typer

from tradewind.settings import Settings, SettingsError, get_settings

#: Exit code of bad input (a ``TRADEWIND_*`` value, a malformed flag), as click uses for usage.
EXIT_BAD_INPUT = 2


def fail(message: str, code: int = 1) -> NoReturn:
    """End the command with ``error: message`` on stderr and exit ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def settings_or_exit() -> Settings:
    """The settings; a bad ``TRADEWIND_*`` value ends the command with exit code 2."""
    try:
        return get_settings()
    except SettingsError as error:
        fail(str(error), EXIT_BAD_INPUT)


def setup_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def parse_conf(text: str | None) -> dict[str, Any]:
    """The ``--conf`` JSON object of a trigger; anything else exits 2 with one line."""
    if text is None:
        return {}
    try:
        conf = json.loads(text)
    except json.JSONDecodeError as error:
        fail(f"--conf is not valid JSON: {error}", EXIT_BAD_INPUT)
    if not isinstance(conf, dict):
        fail(f"--conf must be a JSON object, got {type(conf).__name__}", EXIT_BAD_INPUT)
    return conf
