"""An ETL-like pipeline: extract orders, transform them (the first try fails), load, report.

Run it with ``tradewind standalone --run etl_example`` (embedded broker and SQLite), or
trigger it on a running fleet with ``tradewind dags trigger etl_example --wait``.
"""

from __future__ import annotations

import datetime as dt

from tradewind import dag, get_current_context, task


@task
def extract(rows: int = 5) -> list[dict]:
    """Pretend to read orders from a source system."""
    return [{"order_id": n, "amount_cents": 1000 + 250 * n, "currency": "EUR"} for n in range(rows)]


@task(retries=2, retry_delay=dt.timedelta(seconds=1))
def transform(orders: list[dict]) -> list[dict]:
    """Convert to USD; the first try fails like a flaky upstream API, the retry goes through."""
    ti = get_current_context()["ti"]
    if ti.try_number == 1:
        raise ConnectionError("exchange-rate service timed out (this example fails its first try)")
    rate = 1.08
    return [{**o, "amount_usd": round(o["amount_cents"] * rate / 100, 2)} for o in orders]


@task(multiple_outputs=True)
def load(orders: list[dict]) -> dict:
    """Pretend to write to a warehouse; report what was written."""
    total = round(sum(order["amount_usd"] for order in orders), 2)
    print(f"loaded {len(orders)} orders, {total} USD")
    return {"rows": len(orders), "total_usd": total}


@task
def report(rows: int, total_usd: float, params: dict | None = None) -> str:
    who = (params or {}).get("recipient", "the data team")
    return f"{rows} orders worth {total_usd} USD loaded; sent to {who}"


@dag(dag_id="etl_example", tags=["example"], params={"recipient": "the data team"})
def etl_example():
    loaded = load(transform(extract()))
    report(loaded["rows"], loaded["total_usd"])


etl_example()
