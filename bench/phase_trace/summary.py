"""Per-try wall time of each phase a worker timed (``sitecustomize.py`` beside this file).

    python bench/phase_trace/summary.py DIR/trace-<pid>.txt

Only the steady middle of the run is read (its tries from the 20th to the 80th percentile).
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from itertools import pairwise


def main(path: str) -> None:
    rows = []
    for line in open(path, errors="replace"):  # noqa: SIM115
        fields = line.split()
        if len(fields) == 4:
            rows.append((int(fields[0]), fields[1], float(fields[2]), float(fields[3])))
    tries = sorted((row for row in rows if row[1] == "execute_task_instance"), key=lambda r: r[2])
    low, high = tries[len(tries) // 5][2], tries[4 * len(tries) // 5][2]
    steady = [row for row in rows if low <= row[2] < high]
    count = sum(row[1] == "execute_task_instance" for row in steady)
    print(f"{count} tries in {high - low:.2f} s: {count / (high - low):.1f}/s")
    for name in sorted({row[1] for row in steady}):
        spans = [1000 * (row[3] - row[2]) for row in steady if row[1] == name]
        print(
            f"{name:40s} {len(spans) / count:5.2f} per try, mean {statistics.mean(spans):6.3f} ms,"
            f" p50 {statistics.median(spans):6.3f} ms, per try {sum(spans) / count:6.3f} ms"
        )
    for thread in Counter(row[0] for row in tries):
        own = [row for row in tries if row[0] == thread and low <= row[2] < high]
        gaps = [1000 * (after[2] - before[3]) for before, after in pairwise(own)]
        print(f"slot thread {thread}: between two tries p50 {statistics.median(gaps):.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
