"""The fan-out's timeline on one fleet: when its first task starts, tries ended per second.

    python bench/fan_out_timeline.py [--n 2000] [--runs 3] [--reuse 1000] [--root PATH]
        [--trace DIR] [--pause 1]

One worker (threads pool, ``-c 2``) and one scheduler on PostgreSQL and Redis, as
``bench/fleet_throughput.py`` starts them; the fan-out runs ``--runs`` times on that fleet. Each
run prints its rate, the delay from the run's creation to its first task's queueing and start,
the median try (claim to end), the tries ended in each second, and the CPU per try by process.

``--root``: the checkout whose code the fleet runs (a ``git worktree`` of another commit: two
commits compared in the same minutes, this machine's speed drifting by a third within ten).
``--trace DIR``: the worker times each phase of each try in wall time
(``bench/phase_trace/sitecustomize.py``); ``python bench/phase_trace/summary.py DIR/trace-*.txt``
prints them per try and the gap between a slot's tries.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reuse", type=int, default=1000, help="TRADEWIND_TASK_PROCESS_REUSE")
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the code the fleet runs")
    parser.add_argument("--trace", type=Path, help="a folder for the worker's phase timings")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between runs")
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path[:0] = [str(root), str(root / "bench")]
    import fleet_throughput as bench
    from sqlalchemy import select

    from state.core.db import session_scope
    from state.core.models import DagRun, TaskInstance

    broker = bench.own_broker()
    workdir = Path(tempfile.mkdtemp(prefix="tw-timeline-"))
    tracing = HERE / "phase_trace" if args.trace else None
    if args.trace:
        args.trace.mkdir(parents=True, exist_ok=True)
        os.environ["TW_PHASE_TRACE"] = str(args.trace.resolve())  # the fleet inherits it
    running = bench.bench_fleet_running(args.n, 2, broker, workdir, args.reuse, worker_path=tracing)
    with running as (url, fleet, _env):
        for number in range(args.runs):
            run_id = f"r{number}"
            result = bench.fan_out(url, args.n, fleet, run_id=run_id)
            with session_scope(url) as session:
                created = session.scalar(select(DagRun.created_at).filter_by(run_id=run_id))
                rows = session.execute(
                    select(TaskInstance.queued_at, TaskInstance.start_date,
                           TaskInstance.end_date).filter_by(run_id=run_id)
                ).all()  # fmt: skip
            print_run(run_id, result, created.timestamp(), rows)
            time.sleep(args.pause)


def print_run(run_id: str, result: dict[str, float], created: float, rows: list) -> None:  # type: ignore[type-arg]
    queued = min(row.queued_at.timestamp() for row in rows) - created
    started = min(row.start_date.timestamp() for row in rows) - created
    ends = sorted(row.end_date.timestamp() - created for row in rows)
    tries = sorted((row.end_date - row.start_date).total_seconds() * 1000 for row in rows)
    per_second = [0] * (int(ends[-1]) + 1)
    for end in ends:
        per_second[int(end)] += 1
    cpu = {key[7:]: round(value, 2) for key, value in result.items() if key.startswith("cpu_ms ")}
    print(
        f"{run_id}: {result['fleet_tis_per_s']:.1f}/s; first queued {queued:.2f} s, first start "
        f"{started:.2f} s, last end {ends[-1]:.2f} s; try p50 {tries[len(tries) // 2]:.2f} ms"
    )
    print(f"  ended per second: {per_second}")
    print(f"  CPU ms per try: {cpu}")


if __name__ == "__main__":
    main()
