"""The try's path before and after a change: two checkouts benchmarked in turn, in the same minutes.

    python bench/before_after.py --before ../before [--after .] [--rounds 3] [--n 1000]
        [--chain 100] [--out bench/results/before_after.json] [--from-folder DIR]

Each round runs ``bench/fleet_throughput.py`` (fresh and warm fan-out, the chain hop) and then
``bench/scheduler.py`` (one pass over 100 and 1,000 tasks, the chain, throughput with 1 and 2
schedulers) in the ``--before`` checkout, then the same in ``--after``, each with its own code and
its own virtual environment (``<checkout>/.venv``). Alternating keeps a drift of the machine's
speed (a third within one run here) out of the comparison; each figure is the median over the
rounds, and the ratio after / before is what to read. ``--from-folder`` summarizes runs already
made (files ``{before,after}-<round>.json`` and ``sched-{before,after}-<round>.json``).

Prints a table, writes the JSON and docs/benchmarks/before_after.png.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# (label, file kind, key in that file's JSON, higher is better)
FIGURES = [
    ("fresh tries/s", "fleet", "threads fresh fleet_tis_per_s", True),
    ("warm tries/s", "fleet", "threads warm fleet_tis_per_s", True),
    ("fresh CPU ms per try", "fleet", "threads fresh cpu_ms all", False),
    ("warm CPU ms per try", "fleet", "threads warm cpu_ms all", False),
    ("warm supervisor CPU ms per try", "fleet", "threads warm cpu_ms celery main", False),
    ("chain hop p50 ms (warm)", "fleet", "threads warm chain_hop_p50_ms", False),
    ("chain hop p50 ms (fresh)", "fleet", "threads fresh chain_hop_p50_ms", False),
    ("raw Celery noops/s (baseline)", "fleet", "raw_celery_per_s", True),
    # The machine's speed drifts between runs (raw Celery's own rate by a third here): against
    # raw Celery in the same run, the figures the 10% bound is read on.
    (
        "fresh tries/s / raw Celery",
        "fleet",
        "threads fresh fleet_tis_per_s / raw_celery_per_s",
        True,
    ),
    ("warm tries/s / raw Celery", "fleet", "threads warm fleet_tis_per_s / raw_celery_per_s", True),
    ("fresh CPU per try / raw's", "fleet", "threads fresh cpu_ms all / raw cpu_ms all", False),
    ("warm CPU per try / raw's", "fleet", "threads warm cpu_ms all / raw cpu_ms all", False),
    ("scheduler's first pass, 1,000 tasks, ms", "sched", "pass_1000_first_ms", False),
    ("scheduler's half-way pass, 1,000 tasks, ms", "sched", "pass_1000_half-way_ms", False),
    ("scheduler chain hop p50 ms", "sched", "chain_p50_ms", False),
    ("throughput, 1 scheduler, TIs/s", "sched", "throughput_1", True),
    ("throughput, 2 schedulers, TIs/s", "sched", "throughput_2", True),
]


def run_round(
    checkout: Path, side: str, number: int, folder: Path, args: argparse.Namespace
) -> None:
    python = str(checkout / ".venv" / "bin" / "python")
    fleet = [python, "bench/fleet_throughput.py", "--n", str(args.n), "--chain", str(args.chain)]
    subprocess.run(fleet, cwd=checkout, check=True, stdout=subprocess.DEVNULL)
    shutil.copy(checkout / "bench/results/fleet_throughput.json", folder / f"{side}-{number}.json")
    scheduler = [python, "bench/scheduler.py", "--sizes", "100,1000", "--repeats", "3"]
    scheduler += ["--chain", str(args.chain), "--runs", "30", "--schedulers", "1,2"]
    subprocess.run(scheduler, cwd=checkout, check=True, stdout=subprocess.DEVNULL)
    shutil.copy(checkout / "bench/results/scheduler.json", folder / f"sched-{side}-{number}.json")


def scheduler_figures(raw: dict[str, Any]) -> dict[str, float]:
    """The scheduler bench's figures this comparison reads, by a flat name."""
    found: dict[str, float] = {}
    for row in raw.get("pass", []):
        if row["tasks"] == 1000:
            found[f"pass_1000_{row['pass']}_ms"] = row["ms_median"]
    if raw.get("chain"):
        found["chain_p50_ms"] = raw["chain"]["p50_ms"]
    for row in raw.get("throughput", []):
        found[f"throughput_{row['schedulers']}"] = row["tis_per_s"]
    return found


def figures_of(folder: Path, side: str) -> dict[str, list[float]]:
    """Every figure of ``side`` (before or after), one value per round."""
    values: dict[str, list[float]] = {label: [] for label, *_ in FIGURES}
    for label, kind, key, _ in FIGURES:
        pattern = f"{side}-*.json" if kind == "fleet" else f"sched-{side}-*.json"
        for path in sorted(folder.glob(pattern)):
            raw = json.loads(path.read_text())
            flat = raw if kind == "fleet" else scheduler_figures(raw)
            numerator, _, denominator = key.partition(" / ")
            if numerator in flat and (not denominator or denominator in flat):
                value = float(flat[numerator])
                values[label].append(value / float(flat[denominator]) if denominator else value)
    return values


def summary(folder: Path) -> list[dict[str, Any]]:
    before, after = figures_of(folder, "before"), figures_of(folder, "after")
    rows = []
    for label, _, _, higher_better in FIGURES:
        if not before[label] or not after[label]:
            continue
        b, a = statistics.median(before[label]), statistics.median(after[label])
        change = (a / b - 1) * 100 if higher_better else (b / a - 1) * 100
        rows.append(
            {"figure": label, "before": b, "after": a, "better_pct": change,
             "before_rounds": before[label], "after_rounds": after[label]}
        )  # fmt: skip
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [row["figure"] for row in rows]
    changes = [row["better_pct"] for row in rows]
    figure, axis = plt.subplots(figsize=(8, 0.4 * len(rows) + 1))
    axis.barh(labels, changes, color=["tab:green" if c >= 0 else "tab:red" for c in changes])
    axis.axvline(-10, color="grey", linestyle="--", linewidth=1)
    axis.set_xlabel("after vs before, % better (medians; dashed: 10% worse)")
    raw = next((r for r in rows if r["figure"].startswith("raw Celery")), None)
    if raw is not None:
        same = f"raw Celery, the same code on both sides: {raw['better_pct']:+.0f}%"
        axis.set_title(f"The try's path, two checkouts in turn\n{same}", fontsize=9)
    axis.invert_yaxis()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--chain", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/before_after.json")
    parser.add_argument("--from-folder", type=Path, help="summarize runs already made")
    args = parser.parse_args()
    folder = args.from_folder or Path(tempfile.mkdtemp(prefix="tw-before-after-"))
    if args.from_folder is None:
        if args.before is None:
            parser.error("--before is required unless --from-folder is given")
        for number in range(1, args.rounds + 1):
            for side, checkout in (("before", args.before), ("after", args.after)):
                run_round(checkout.resolve(), side, number, folder, args)
    rows = summary(folder)
    print(f"{'figure':<44} {'before':>9} {'after':>9} {'better':>8}")
    for row in rows:
        print(
            f"{row['figure']:<44} {row['before']:>9.2f} {row['after']:>9.2f}"
            f" {row['better_pct']:>+7.1f}%"
        )
    args.out.write_text(json.dumps(rows, indent=1))
    plot(rows, ROOT / "docs/benchmarks/before_after.png")


if __name__ == "__main__":
    main()
