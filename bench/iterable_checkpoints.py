"""Per-round checkpoints against one checkpoint per index, measured as the reference measured them.

    python bench/iterable_checkpoints.py [--sizes 1000,5000,16194] [--item-ms 5] [--latency-ms 2]

An iterable task's item loop (``worker.task_runner.iterable.ItemRunner``,
``task_concurrency=16``, ``async def`` items that each wait ``--item-ms``) runs in this process
against a stand-in supervisor: one channel (a lock, as the task's socket is), every request
answered after ``--latency-ms``, values kept in a dict. Two schemes, same items, same channel:

- per round (Tradewind's): one ``WriteCheckpointBatch`` per 16 outcomes, one
  ``ReadCheckpointBatches`` before a retry (``worker/task_runner/checkpoints.py``);
- per index (the baseline, kept only here): one write per outcome under ``_iterable_<index>``; a
  retry lists the keys, then reads them one by one.

For each N: store writes and reads of a first attempt, and of a retry after 1% of the items
failed; wall time of each. Prints a table, writes bench/results/iterable_checkpoints.json and
docs/benchmarks/iterable_checkpoints.png. The first attempt's ratio depends on how long items
take (the writes hide behind them); the retry's does not, since its reads come before any item.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tradewind import DAG, get_current_context, task
from tradewind.context import RuntimeTaskInstance, set_current_context
from worker import wire as p
from worker.task_runner.checkpoint_store import SupervisorCheckpointStore
from worker.task_runner.checkpoints import Checkpoints, EarlierCheckpoints, IndexedTaskOutcome
from worker.task_runner.iterable import ItemRunner

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 16
FAILING: set[int] = set()  # items that fail the first attempt (1% of them)


class Channel:
    """The stand-in supervisor: one request at a time, each answered after ``latency``."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.lock = threading.Lock()
        self.values: dict[str, Any] = {}
        self.counts: Counter[str] = Counter()

    def request(self, message: p.Message) -> p.Message:
        with self.lock:
            time.sleep(self.latency)
            self.counts[type(message).__name__] += 1
            return self._answer(message)

    def _answer(self, message: p.Message) -> p.Message:
        if isinstance(message, p.WriteCheckpointBatch):
            self.values[f"_iterable_batch_{message.number}"] = message.value
        elif isinstance(message, p.SetStateValue):
            self.values[message.key] = message.value
        elif isinstance(message, p.GetStateValue):
            return p.StateValueResult(found=True, value=self.values.get(message.key))
        elif isinstance(message, p.ReadCheckpointBatches):
            batches = {
                int(key.rsplit("_", 1)[1]): value
                for key, value in self.values.items()
                if key.startswith("_iterable_batch_")
            }
            return p.CheckpointBatchesResult(batches=batches)
        return p.OKResponse()

    def get_xcom(self, *args: Any) -> Any:
        return None


class PerIndexCheckpoints(Checkpoints):
    """The baseline: every outcome its own write, a retry reads every index back."""

    def __init__(self, channel: Channel, generation: int) -> None:
        super().__init__(SupervisorCheckpointStore(channel), generation, CONCURRENCY)
        self.channel = channel

    def read(self, is_retry: bool) -> EarlierCheckpoints:
        if not is_retry:
            return EarlierCheckpoints.nothing()
        self.channel.request(p.GetStateValue(key="_iterable_keys"))  # list what exists
        outcomes = {}
        for key in [k for k in self.channel.values if k.startswith("_iterable_")]:
            reply = self.channel.request(p.GetStateValue(key=key))
            assert isinstance(reply, p.StateValueResult)
            outcome = IndexedTaskOutcome.from_entry(reply.value)
            if outcome is not None:
                outcomes[outcome.index] = outcome
        return EarlierCheckpoints(outcomes, 0)

    def record(self, outcome: IndexedTaskOutcome) -> None:
        key = f"_iterable_{outcome.index}"
        self.channel.request(p.SetStateValue(key=key, value=outcome.to_entry()))

    def finish(self, summary: dict[str, Any]) -> bool:
        return True


def make_task(items: int, item_seconds: float) -> Any:
    @task(task_concurrency=CONCURRENCY)
    async def item(x: int) -> int:
        await asyncio.sleep(item_seconds)
        if x in FAILING and get_current_context()["ti"].try_number == 1:
            raise ValueError("fails its first attempt")
        return x

    with DAG("bench") as dag:
        item.iterate(x=list(range(items)))
    return dag.tasks["item"]


def attempt(task_: Any, channel: Channel, scheme: str, try_number: int) -> dict[str, Any]:
    """One attempt's item loop; its store calls and wall time."""
    ti = RuntimeTaskInstance("bench", "r1", "item", -1, try_number, channel)  # type: ignore[arg-type]
    context = {"ti": ti}
    set_current_context(context)
    if scheme == "per round":
        checkpoints: Checkpoints = Checkpoints(SupervisorCheckpointStore(channel), 0, CONCURRENCY)
    else:
        checkpoints = PerIndexCheckpoints(channel, 0)
    before = Counter(channel.counts)
    started = time.perf_counter()
    runner = ItemRunner(task_, context, channel, checkpoints)  # type: ignore[arg-type]
    items = runner.prepare(-1, retry=try_number > 1)
    runner.run_all(items)
    checkpoints.finish({})
    wall = time.perf_counter() - started
    counts = channel.counts - before
    writes = counts["WriteCheckpointBatch"] + counts["SetStateValue"]
    reads = counts["ReadCheckpointBatches"] + counts["GetStateValue"]
    return {"writes": writes, "reads": reads, "wall_s": round(wall, 3)}


def measure(items: int, item_seconds: float, latency: float) -> dict[str, Any]:
    FAILING.clear()
    FAILING.update(range(0, items, 100))
    task_ = make_task(items, item_seconds)
    row: dict[str, Any] = {"items": items}
    for scheme in ("per round", "per index"):
        channel = Channel(latency)
        row[scheme] = {"first": attempt(task_, channel, scheme, 1)}
        row[scheme]["retry"] = attempt(task_, channel, scheme, 2)
    for phase in ("first", "retry"):
        ratio = row["per index"][phase]["wall_s"] / row["per round"][phase]["wall_s"]
        row[f"speedup_{phase}"] = round(ratio, 2)
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'items':>6} | {'scheme':9} | {'writes 1st':>10} | {'reads retry':>11} | "
        f"{'wall 1st s':>10} | {'wall retry s':>12}"
    )
    for row in rows:
        for scheme in ("per round", "per index"):
            first, retry = row[scheme]["first"], row[scheme]["retry"]
            print(
                f"{row['items']:>6} | {scheme:9} | {first['writes']:>10} | {retry['reads']:>11} | "
                f"{first['wall_s']:>10} | {retry['wall_s']:>12}"
            )
        print(
            f"{'':>6} | per index / per round wall: first {row['speedup_first']}x, "
            f"retry {row['speedup_retry']}x; ceil(N/16) = {math.ceil(row['items'] / 16)}"
        )


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    sizes = [row["items"] for row in rows]
    for axis, phase in zip(axes, ("first", "retry"), strict=True):
        for scheme in ("per round", "per index"):
            axis.plot(
                sizes, [row[scheme][phase]["wall_s"] for row in rows], marker="o", label=scheme
            )
        axis.set(title=f"{phase} attempt", xlabel="items", ylabel="wall time (s)")
        axis.legend()
    figure.suptitle(f"Iterable task checkpoints, concurrency {CONCURRENCY}, 2 ms per request")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,16194")
    parser.add_argument("--item-ms", type=float, default=5.0)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    args = parser.parse_args()
    logging.getLogger("tradewind.iterable").setLevel(logging.CRITICAL)  # 1% fail on purpose
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = [measure(size, args.item_ms / 1000, args.latency_ms / 1000) for size in sizes]
    print_table(rows)
    result = {"concurrency": CONCURRENCY, "item_ms": args.item_ms, "latency_ms": args.latency_ms}
    result["rows"] = rows
    out = ROOT / "bench" / "results" / "iterable_checkpoints.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    plot(rows, ROOT / "docs" / "benchmarks" / "iterable_checkpoints.png")
    print(f"wrote {out.relative_to(ROOT)} and docs/benchmarks/iterable_checkpoints.png")


if __name__ == "__main__":
    main()
