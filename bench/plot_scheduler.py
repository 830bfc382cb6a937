"""Plot bench/results/scheduler.json (from bench/scheduler.py) to docs/benchmarks/scheduler.png."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    result = json.loads((ROOT / "bench" / "results" / "scheduler.json").read_text())
    figure, (statements, wall, schedulers) = plt.subplots(1, 3, figsize=(12, 3.5))
    for phase, color in (("first", "tab:blue"), ("half-way", "tab:orange")):
        rows = [row for row in result["pass"] if row["pass"] == phase]
        sizes = [row["tasks"] for row in rows]
        statements.plot(sizes, [row["statements"] for row in rows], "o-", color=color, label=phase)
        wall.plot(sizes, [row["ms_median"] for row in rows], "o-", color=color, label=phase)
    for axis, title in ((statements, "SQL statements per pass"), (wall, "ms per pass")):
        axis.set_xscale("log")
        axis.set_xlabel("tasks in the run")
        axis.set_title(title)
        axis.legend()
    statements.set_ylim(bottom=0)
    rows = result["throughput"]
    schedulers.bar([str(row["schedulers"]) for row in rows], [row["tis_per_s"] for row in rows])
    schedulers.set_xlabel("schedulers")
    schedulers.set_title("task instances/s (execution stubbed)")
    figure.tight_layout()
    figure.savefig(ROOT / "docs" / "benchmarks" / "scheduler.png", dpi=110)


if __name__ == "__main__":
    main()
