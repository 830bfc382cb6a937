"""A task's line without a newline, read by its supervisor's log: seconds and peak memory by size.

Feeds one line of N MiB, 64 KiB at a time (what the supervisor's loop reads from a pipe), to a
``TryLog`` with the default limits (``TRADEWIND_TASK_LOG_LINE_MAX_BYTES`` 64 KiB,
``TRADEWIND_TASK_LOG_MAX_BYTES`` 100 MiB), and for comparison to the buffering it replaced (the
buffered part joined again with every read), up to the size that stays quick. Linear reading
shows as seconds per MiB that do not grow with the size, and a peak that does not grow at all.

    python bench/task_output.py [--sizes 8,16,32,64,128] [--before-max 32]

Prints a table and writes bench/results/task_output.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from worker.supervisor.logs import LogLimits, TryLog  # noqa: E402

MIB = 1024 * 1024
READ_BYTES = 64 * 1024
DEFAULTS = LogLimits(line_max_bytes=64 * 1024, max_bytes=100 * MIB)


def feed_now(path: Path, size_mib: int) -> None:
    log = TryLog(path, DEFAULTS)
    read = b"x" * READ_BYTES
    for _ in range(size_mib * MIB // READ_BYTES):
        log.feed("stdout", read)
    log.close()


def feed_before(path: Path, size_mib: int) -> None:
    """The buffering this replaced: a pipe's unfinished line re-joined with every read."""
    partial = b""
    read = b"x" * READ_BYTES
    with path.open("ab") as log:
        for _ in range(size_mib * MIB // READ_BYTES):
            *lines, partial = (partial + read).split(b"\n")
            log.write(b"".join(line + b"\n" for line in lines))
        log.write(partial + b"\n")


def measure(feed: Callable[[Path, int], None], size_mib: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        tracemalloc.start()
        started = time.perf_counter()
        feed(Path(folder) / "1.log", size_mib)
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {"seconds": round(seconds, 3), "peak_mib": round(peak / MIB, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,16,32,64,128", help="line sizes in MiB")
    parser.add_argument("--before-max", type=int, default=32, help="largest size for 'before'")
    args = parser.parse_args()
    rows = []
    for size in (int(part) for part in args.sizes.split(",")):
        now = measure(feed_now, size)
        before = measure(feed_before, size) if size <= args.before_max else None
        rows.append({"size_mib": size, "now": now, "before": before})
        shown = f"{before['seconds']:8.2f} s {before['peak_mib']:8.1f} MiB" if before else "—"
        print(
            f"{size:5d} MiB  now {now['seconds']:6.2f} s {now['peak_mib']:6.1f} MiB  before {shown}"
        )
    out = ROOT / "bench" / "results" / "task_output.json"
    out.write_text(json.dumps({"read_bytes": READ_BYTES, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
