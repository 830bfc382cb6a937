"""An iterable task over 3,000 items: ONE task instance runs them all, 64 at a time.

``fetch.iterate(page=...)`` makes one task instance that runs every page on one event loop
(``fetch`` is ``async def``), writing its outcomes to the state store once per round of 64. The
first try fails three pages on purpose, like a flaky server; the retry reads the earlier rounds
in one request and runs only those three (its log says "3000 items: 2997 finished in earlier
tries, 3 to run"). ``summarize`` receives the 3,000 results as one list, in page order.

Run it with ``tradewind standalone --run iterable_example``, or on a running fleet with
``tradewind dags trigger iterable_example --wait``; ``tradewind runs show`` shows the items
done, failed and skipped of ``fetch``.
"""

from __future__ import annotations

import asyncio
import hashlib

from tradewind import dag, get_current_context, task

FLAKY_PAGES = {"page-00007", "page-01234", "page-02999"}


@task
def list_pages(params: dict | None = None) -> list[str]:
    """Pretend to list what to fetch."""
    count = int((params or {}).get("pages", 3000))
    return [f"page-{n:05d}" for n in range(count)]


@task(task_concurrency=64, retries=2, retry_delay=1)
async def fetch(page: str) -> dict:
    """Pretend to fetch one page: a moment of I/O, then a digest of it."""
    await asyncio.sleep(0.001)
    if page in FLAKY_PAGES and get_current_context()["ti"].try_number == 1:
        raise ConnectionError(f"{page}: server closed the connection (fails its first try)")
    return {"page": page, "digest": hashlib.sha256(page.encode()).hexdigest()[:12]}


@task
def summarize(pages: list[dict]) -> dict:
    """One list, in page order, whatever order the pages finished in."""
    assert [p["page"] for p in pages] == sorted(p["page"] for p in pages)
    print(f"{len(pages)} pages fetched; first {pages[0]['page']}, last {pages[-1]['page']}")
    return {"pages": len(pages), "first_digest": pages[0]["digest"]}


@dag(dag_id="iterable_example", tags=["example"], params={"pages": 3000})
def iterable_example():
    summarize(fetch.iterate(page=list_pages()))


iterable_example()
