"""One task depending on its past: it waits for a file when asked, fails when asked."""

from __future__ import annotations

import time
from pathlib import Path

from tradewind import dag, task


@task(depends_on_past=True)
def step(params=None) -> str:
    if params["wait_for"]:
        while not Path(params["wait_for"]).exists():
            time.sleep(0.1)
    if params["fail"]:
        raise RuntimeError("asked to fail")
    return "done"


@dag(dag_id="past_chain")
def past_chain(wait_for: str = "", fail: bool = False):
    step()


past_chain()
