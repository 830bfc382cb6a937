"""A task that fails its first try and succeeds its second: the marker file says which."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from tradewind import dag, task


@task(retries=1, retry_delay=dt.timedelta(seconds=1))
def wobble(params=None) -> str:
    marker = Path(params["marker"])
    time.sleep(0.5)  # the page sees the try running (it need not: an end is seen too)
    if not marker.exists():
        marker.write_text("tried")
        print("first try: the source is not ready")
        raise RuntimeError("the source is not ready")
    print("second try: the source answered")
    return "ok"


@dag(dag_id="flaky", tags=["audit"])
def flaky(marker="/nonexistent"):
    wobble()


flaky()
