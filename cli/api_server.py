"""``tradewind api-server``: the REST API (and, later, the pages) on uvicorn.

The CLI builds the app: it is the part that may import the worker, whose purgers a clear needs
when XComs or state values live in object storage (``api/`` itself never imports the worker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.common import fail, settings_or_exit, setup_logging
from cli.store import open_store
from state.records import JobKind, keep_beating
from tradewind.settings import Settings, SettingsError

if TYPE_CHECKING:
    from api import Purgers


def purgers_for(settings: Settings) -> Purgers:
    """The XCom and state purgers of the configured backends (None for the SQL ones)."""
    from api import Purgers
    from worker.state_store.purge import state_purger
    from worker.xcom.purge import xcom_purger

    try:
        return Purgers(xcom_purger(settings), state_purger(settings))
    except (SettingsError, LookupError) as error:
        fail(str(error))


def api_server(
    host: Annotated[
        str | None, typer.Option("--host", help="Default: TRADEWIND_API_HOST (127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=1, max=65535, help="Default: TRADEWIND_API_PORT (8080)."),
    ] = None,
) -> None:
    """Serve Airflow 3's REST API v2 (/api/v2) and sign-in (/auth) from the SQL store."""
    # Imported here, as the worker is: every other command starts without FastAPI.
    import uvicorn

    from api import create_app
    from api.concurrency import size_store_pool

    settings = settings_or_exit()
    size_store_pool(settings)  # before the store's engine is made: it keeps the size it got
    url = open_store(settings)
    setup_logging()
    if settings.metrics_enabled:  # what this process counts (outages it rides) reaches /metrics
        from state.core import start_flushing

        start_flushing(url, settings.metrics_flush_seconds)
    app = create_app(settings, purgers_for(settings))
    # uvicorn returns from a SIGTERM or Ctrl-C once its requests are done: the job row ends.
    beats = settings.job_heartbeat_seconds
    with keep_beating(settings.sql_url, JobKind.API_SERVER, beats):
        uvicorn.run(
            app,
            host=host or settings.api_host,
            port=port or settings.api_port,
            log_level="info",
            proxy_headers=True,
        )
