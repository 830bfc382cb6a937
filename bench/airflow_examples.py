"""The Airflow 3 yardstick: Airflow's own example DAGs that import only from ``airflow.sdk``, run
by Tradewind after one import swap (``airflow.sdk`` -> ``tradewind``).

The examples come from the ``apache-airflow-core`` wheel (``pip download --no-deps``, cached under
``~/.cache/tradewind/airflow-examples``, never committed). For each file: does it load, and for
each of its DAGs, does ``tradewind dags test`` end as it does in Airflow (success, except
``example_failed_dag``, which fails on purpose). DAGs that would reach the network are not run.

    python bench/airflow_examples.py [--cache DIR] [--only FILE_STEM ...]

Prints a table and writes bench/results/airflow_examples.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tradewind.loader import DagBag  # noqa: E402

REQUIREMENT = "apache-airflow-core==3.3.2"
EXAMPLES = "airflow/example_dags/"
DEFAULT_CACHE = Path.home() / ".cache" / "tradewind" / "airflow-examples"
RUN_TIMEOUT_SECONDS = 300

#: What ``airflow dags test`` ends with where it is not success.
EXPECTED = {"example_failed_dag": "failed"}
#: A run's conf where Airflow needs one: this DAG has a required param with no default.
CONF = {"example_params_ui_tutorial": {"required_field": "a value of 10 to 30 characters"}}
#: DAGs whose tasks call a host on the internet: loaded, never run here.
NOT_RUN = {
    "example_retry_policy": "its task calls https://api.example.com",
    "tutorial_objectstorage": "its tasks call an air quality API and write to S3",
}
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)


class WheelUnavailable(RuntimeError):
    """The wheel could not be downloaded (no index, no network)."""


@dataclass
class DagOutcome:
    dag_id: str
    expected: str | None  # None: not run (reason in ``detail``)
    outcome: str | None = None
    detail: str = ""

    @property
    def as_in_airflow(self) -> bool:
        return self.expected is not None and self.outcome == self.expected


@dataclass
class FileReport:
    name: str
    error: str | None = None
    dags: list[DagOutcome] = field(default_factory=list)


def download_wheel(cache: Path) -> Path:
    """The wheel in ``cache``, downloaded once."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("apache_airflow_core-*.whl"))
    if found:
        return found[-1]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache)]
    done = subprocess.run([*command, REQUIREMENT], capture_output=True, text=True, check=False)
    found = sorted(cache.glob("apache_airflow_core-*.whl"))
    if done.returncode != 0 or not found:
        last = (done.stderr.strip().splitlines() or ["no wheel saved"])[-1]
        raise WheelUnavailable(f"pip download {REQUIREMENT} failed: {last}")
    return found[-1]


def sdk_only(source: str) -> bool:
    """The file imports Airflow, and only from ``airflow.sdk`` (or below it)."""
    modules = {a or b for a, b in _IMPORT.findall(source)}
    airflow = [m for m in modules if m == "airflow" or m.startswith("airflow.")]
    return bool(airflow) and all(
        m == "airflow.sdk" or m.startswith("airflow.sdk.") for m in airflow
    )


def swap_imports(source: str) -> str:
    return re.sub(r"\bairflow\.sdk\b", "tradewind", source)


def write_dags_folder(wheel: Path, folder: Path, only: list[str] | None = None) -> list[str]:
    """The ``airflow.sdk``-only examples, imports swapped, in ``folder``; their file names.

    The examples' other files (``sql/`` templates) are copied as they are.
    """
    names = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if not member.startswith(EXAMPLES) or member.endswith("/"):
                continue
            relative = member[len(EXAMPLES) :]
            data = archive.read(member)
            if relative.endswith(".py"):
                source = data.decode()
                if "/" in relative or not sdk_only(source):
                    continue
                if only and Path(relative).stem not in only:
                    continue
                names.append(relative)
                data = swap_imports(source).encode()
            elif relative.startswith(("plugins/", "libs/")):
                continue
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return sorted(names)


def run_dag(dag_id: str, env: dict[str, str]) -> tuple[str, str]:
    """``tradewind dags test DAG_ID`` in its own process: its outcome and last error line."""
    command = [sys.executable, "-m", "cli", "dags", "test", dag_id, "--no-logs"]
    if dag_id in CONF:
        command += ["--conf", json.dumps(CONF[dag_id])]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        return "timed out", f"still running after {RUN_TIMEOUT_SECONDS} s"
    outcome = "success" if done.returncode == 0 else "failed"
    lines = (done.stdout + done.stderr).strip().splitlines()
    errors = [line.strip() for line in lines if "failed" in line or "Error" in line]
    return outcome, (errors[-1] if errors else (lines[-1].strip() if lines else ""))


def run_examples(wheel: Path, work: Path, only: list[str] | None = None) -> list[FileReport]:
    """Load the examples into a DAGs folder under ``work``, then test each DAG that loads."""
    folder = work / "dags"
    folder.mkdir(parents=True, exist_ok=True)
    names = write_dags_folder(wheel, folder, only)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
    env |= {"TRADEWIND_HOME": str(work / "home"), "TRADEWIND_DAGS_FOLDER": str(folder)}
    reports = []
    for name in names:
        bag = DagBag(folder)
        bag.add_file(folder / name)
        report = FileReport(name)
        if bag.import_errors:
            report.error = next(iter(bag.import_errors.values()))[0]
        for dag_id in sorted(bag.dags):
            report.dags.append(test_one(dag_id, env))
        reports.append(report)
    return reports


def test_one(dag_id: str, env: dict[str, str]) -> DagOutcome:
    if dag_id in NOT_RUN:
        return DagOutcome(dag_id, None, detail=f"not run: {NOT_RUN[dag_id]}")
    result = DagOutcome(dag_id, EXPECTED.get(dag_id, "success"))
    result.outcome, result.detail = run_dag(dag_id, env)
    return result


def dag_count(wheel: Path) -> int:
    """How many DAGs the files declare, counted in Airflow's terms (``dag_id=``, ``@dag``,
    ``@asset``): a file that does not load still counts its DAGs."""
    total = 0
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            relative = member[len(EXAMPLES) :]
            if not member.startswith(EXAMPLES) or "/" in relative or not relative.endswith(".py"):
                continue
            source = archive.read(member).decode()
            if sdk_only(source):
                total += declared_dags(source)
    return total


def declared_dags(source: str) -> int:
    with_dag = len(re.findall(r"^\s*with DAG\(", source, re.MULTILINE))
    decorated = len(re.findall(r"^@(?:dag|asset)\b", source, re.MULTILINE))
    return with_dag + decorated


def summary(reports: list[FileReport], total_dags: int) -> dict[str, int]:
    dags = [outcome for report in reports for outcome in report.dags]
    return {
        "files": len(reports),
        "files_loading": sum(report.error is None for report in reports),
        "dags": total_dags,
        "dags_loading": len(dags),
        "dags_as_in_airflow": sum(outcome.as_in_airflow for outcome in dags),
        "dags_not_run": sum(outcome.expected is None for outcome in dags),
    }


def print_table(reports: list[FileReport], counts: dict[str, int]) -> None:
    for report in reports:
        print(f"{report.name:60} {'loads' if report.error is None else report.error}")
        for dag in report.dags:
            mark = "ok " if dag.as_in_airflow else ("-- " if dag.expected is None else "BAD")
            seen = f"{dag.outcome} (expected {dag.expected})" if dag.expected else ""
            print(
                f"    {mark} {dag.dag_id:52} {seen}  {dag.detail if not dag.as_in_airflow else ''}"
            )
    print(
        f"\n{counts['dags_as_in_airflow']} of {counts['dags']} DAGs run as in Airflow; "
        f"{counts['files_loading']} of {counts['files']} files load "
        f"({counts['dags_loading']} DAGs, {counts['dags_not_run']} not run: network)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", nargs="*", help="File stems to run (default: all).")
    options = parser.parse_args()
    try:
        wheel = download_wheel(options.cache)
    except WheelUnavailable as error:
        sys.exit(str(error))
    with tempfile.TemporaryDirectory(prefix="tradewind-airflow-") as work:
        reports = run_examples(wheel, Path(work), options.only)
    counts = summary(reports, dag_count(wheel))
    print_table(reports, counts)
    document = {"counts": counts, "files": [asdict(report) for report in reports]}
    results = ROOT / "bench" / "results" / "airflow_examples.json"
    results.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
