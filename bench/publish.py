"""Publishing one try: Celery's producer against the direct LPUSH, CPU per try in this process.

    python bench/publish.py [--n 2000] [--rounds 5] [--broker redis://127.0.0.1:6391/0]

Each round publishes ``n`` tries one call at a time (as a pool process hands over the next try),
first through Celery's ``send_task`` (``broker_config.publish._send_many``, the path before
issue 16), then directly (``_push_many``), each with and without the ``task-sent`` event; the
CPU (``time.process_time``) and the wall time per try are the medians over the rounds, so both
ways see the same machine. The queue is emptied after each batch.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from broker_config import publish  # noqa: E402
from broker_config.app import make_celery_app  # noqa: E402
from state.engine.scheduling import Enqueue  # noqa: E402

WAYS: dict[str, Callable[..., int]] = {
    "celery send_task": publish._send_many,
    "direct LPUSH": publish._push_many,
}


def one_batch(send: Callable[..., int], app: object, n: int) -> tuple[float, float]:
    """CPU and wall ms per try over ``n`` single-try publishes."""
    tries = [Enqueue(i + 1, 1, "bench_dag", "bench_run", f"t{i}", -1, "default") for i in range(n)]
    cpu, wall = time.process_time(), time.perf_counter()
    for queued in tries:
        send(app, [queued])
    return (
        (time.process_time() - cpu) * 1000 / n,
        (time.perf_counter() - wall) * 1000 / n,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--broker", default="redis://127.0.0.1:6391/0")
    args = parser.parse_args()
    client = redis.Redis.from_url(args.broker)
    folder = Path(tempfile.mkdtemp(prefix="tw-publish-"))
    apps = {events: make_celery_app(args.broker, folder, sent_events=events) for events in (1, 0)}
    figures: dict[str, list[tuple[float, float]]] = {}
    for _round in range(args.rounds):
        for events, app in apps.items():
            for way, send in WAYS.items():
                label = f"{way}, {'with' if events else 'no'} task-sent"
                figures.setdefault(label, []).append(one_batch(send, app, args.n))
                client.delete("default")
    base = statistics.median(cpu for cpu, _ in figures["celery send_task, with task-sent"])
    print(f"{'publish of one try':<36}{'CPU ms':>10}{'wall ms':>10}{'CPU ÷ Celery':>14}")
    for label, samples in figures.items():
        cpu = statistics.median(c for c, _ in samples)
        wall = statistics.median(w for _, w in samples)
        print(f"{label:<36}{cpu:>10.3f}{wall:>10.3f}{cpu / base:>14.2f}")


if __name__ == "__main__":
    main()
