"""The yardstick: Airflow's own example DAGs, copied unchanged, run as Airflow runs them.

The examples of ``apache-airflow-core==3.3.2`` (``airflow/example_dags/``, with ``libs/``,
``plugins/`` and ``sql/``) and of ``apache-airflow-providers-standard==1.21.0`` (its
``example_dags/``, under ``standard/``) are copied byte for byte into one DAGs folder (wheels
from ``pip download --no-deps``, cached under ``~/.cache/tradewind/airflow-examples``, never
committed). For each file: does it load; for each DAG, ``tradewind dags test`` in a process of
its own, and the run's state and every task instance's compared with what Airflow 3.3.2's
``airflow dags test`` made of the same DAG (``bench/results/airflow_reference.json``, written by
``bench/airflow_reference.py``). DAGs that cannot mean anything here are not run, each with its
reason printed.

    python bench/airflow_examples.py [--cache DIR] [--only FILE_STEM ...]   (--only: merged
                                                                   into the last run's results)

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tradewind.loader import DagBag  # noqa: E402

#: The wheels, and where in each the examples are, and under which folder they are copied.
SOURCES = (
    ("apache-airflow-core==3.3.2", "apache_airflow_core-*.whl", "airflow/example_dags/", ""),
    (
        "apache-airflow-providers-standard==1.21.0",
        "apache_airflow_providers_standard-*.whl",
        "airflow/providers/standard/example_dags/",
        "standard/",
    ),
)
DEFAULT_CACHE = Path.home() / ".cache" / "tradewind" / "airflow-examples"
REFERENCE = ROOT / "bench" / "results" / "airflow_reference.json"
RUN_TIMEOUT_SECONDS = 300
#: DAGs that take longer, by design: how long each is given.
LONG_RUNS = {
    # Its sensor waits out its timeout (600 s) for a parent run a test run never makes; Airflow's
    # DAG.test() fails it then, and so does Tradewind's.
    "example_external_task_marker_child": 720,
}
RUN_ID = "yardstick"

#: A run's conf where Airflow needs one: this DAG has a required param with no default.
CONF = {"example_params_ui_tutorial": {"required_field": "a value of 10 to 30 characters"}}
#: DAGs that cannot mean anything here: loaded, never run (by Tradewind or for the reference).
NOT_RUN = {
    "example_retry_policy": "its task calls https://api.example.com",
    "tutorial_objectstorage": "its tasks call an air quality API and write to S3",
    "example_dag_decorator": "its task calls https://httpbingo.org (with httpx, which Airflow "
    "installs and Tradewind does not)",
    "example_kubernetes_executor": "pod overrides for Airflow's Kubernetes executor",
    "example_local_kubernetes_executor": "pod overrides for Airflow's Kubernetes executor",
}


def read_reference() -> dict[str, Any]:
    """Airflow's outcomes: ``{"dags": {dag_id: {"state", "tasks"}}, "import_errors": {...}}``."""
    if not REFERENCE.exists():
        return {"dags": {}, "import_errors": {}}
    reference: dict[str, Any] = json.loads(REFERENCE.read_text())
    return reference


#: DAGs whose branch depends on chance or on the day and hour the run starts: the run's state is
#: compared, not which task instances ran.
STATE_ONLY = {
    "example_branch_operator": "random.choice picks the branch",
    "example_branch_python_operator_decorator": "random.choice picks the branch",
    "example_weekday_branch_operator": "the branch is today's weekday",
    "example_branch_datetime_operator": "the branch is the time of day",
    "example_branch_datetime_operator_2": "the branch is the time of day",
    "example_branch_datetime_operator_3": "the branch is the time of day",
    "example_branch_dop_operator_v3": "the branch is the logical date's minute, odd or even",
}


class WheelUnavailable(RuntimeError):
    """A wheel could not be downloaded (no index, no network)."""


@dataclass
class DagOutcome:
    dag_id: str
    expected: str | None  # the run's state in Airflow; None: not run (reason in ``detail``)
    outcome: str | None = None
    detail: str = ""
    tasks: dict[str, str | None] = field(default_factory=dict)  # Tradewind's, by task[map index]
    tasks_differ: dict[str, list[str | None]] = field(default_factory=dict)

    @property
    def as_in_airflow(self) -> bool:
        return self.expected is not None and self.outcome == self.expected and not self.tasks_differ


@dataclass
class FileReport:
    name: str
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    dags: list[DagOutcome] = field(default_factory=list)


def download_wheels(cache: Path) -> list[Path]:
    """The wheels in ``cache``, each downloaded once."""
    cache.mkdir(parents=True, exist_ok=True)
    return [_wheel(cache, requirement, pattern) for requirement, pattern, _, _ in SOURCES]


def _wheel(cache: Path, requirement: str, pattern: str) -> Path:
    found = sorted(cache.glob(pattern))
    if found:
        return found[-1]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache)]
    done = subprocess.run([*command, requirement], capture_output=True, text=True, check=False)
    found = sorted(cache.glob(pattern))
    if done.returncode != 0 or not found:
        last = (done.stderr.strip().splitlines() or ["no wheel saved"])[-1]
        raise WheelUnavailable(f"pip download {requirement} failed: {last}")
    return found[-1]


def write_dags_folder(wheels: list[Path], folder: Path, only: list[str] | None = None) -> list[str]:
    """Every file of the examples, unchanged, in ``folder``; the DAG files' names.

    The DAG files are the examples' top-level modules; ``libs/``, ``plugins/`` and ``sql/`` are
    what they import and read.
    """
    names = []
    for wheel, (_, _, prefix, under) in zip(wheels, SOURCES, strict=True):
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                relative = member[len(prefix) :]
                if not member.startswith(prefix) or member.endswith("/"):
                    continue
                target = folder / under / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
                if _is_dag_file(relative) and (not only or Path(relative).stem in only):
                    names.append(under + relative)
    return sorted(names)


def _is_dag_file(relative: str) -> bool:
    return "/" not in relative and relative.endswith(".py") and relative != "__init__.py"


def tradewind_env(work: Path, folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
    return env | {"TRADEWIND_HOME": str(work / "home"), "TRADEWIND_DAGS_FOLDER": str(folder)}


def run_dag(dag_id: str, env: dict[str, str]) -> tuple[str, str, dict[str, str | None]]:
    """``tradewind dags test DAG_ID`` in its own process and store: the run's state, its last
    error line, and each task instance's state."""
    env = env | {"TRADEWIND_HOME": str(Path(env["TRADEWIND_HOME"]) / dag_id)}
    command = [sys.executable, "-m", "cli", "dags", "test", dag_id, "--no-logs", "--run-id", RUN_ID]
    if dag_id in CONF:
        command += ["--conf", json.dumps(CONF[dag_id])]
    limit = LONG_RUNS.get(dag_id, RUN_TIMEOUT_SECONDS)
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return "timed out", f"still running after {limit} s", {}
    lines = (done.stdout + done.stderr).strip().splitlines()
    errors = [line.strip() for line in lines if "failed" in line or "Error" in line]
    detail = errors[-1] if errors else (lines[-1].strip() if lines else "")
    state, tasks = run_states(dag_id, env)
    return state or ("success" if done.returncode == 0 else "failed"), detail, tasks


def run_states(dag_id: str, env: dict[str, str]) -> tuple[str | None, dict[str, str | None]]:
    command = [sys.executable, "-m", "cli", "runs", "show", dag_id, RUN_ID, "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return None, {}
    document = json.loads(done.stdout)
    tasks = {
        f"{ti['task_id']}[{ti['map_index']}]": ti["state"] for ti in document["task_instances"]
    }
    return document["state"], tasks


def compare(expected: dict[str, Any], tasks: dict[str, str | None]) -> dict[str, list[str | None]]:
    """The task instances whose state differs from Airflow's: {key: [Airflow's, Tradewind's]}."""
    theirs: dict[str, str | None] = {
        key: (None if state == "None" else state) for key, state in expected["tasks"].items()
    }
    return {
        key: [theirs.get(key), tasks.get(key)]
        for key in sorted(set(theirs) | set(tasks))
        if theirs.get(key) != tasks.get(key)
    }


def test_one(dag_id: str, env: dict[str, str], reference: dict[str, Any]) -> DagOutcome:
    if dag_id in NOT_RUN:
        return DagOutcome(dag_id, None, detail=f"not run: {NOT_RUN[dag_id]}")
    result = DagOutcome(dag_id, None)
    result.outcome, result.detail, result.tasks = run_dag(dag_id, env)
    return judged(result, reference)


def judged(result: DagOutcome, reference: dict[str, Any]) -> DagOutcome:
    """``result`` with Airflow's outcome of the same DAG, and the task instances that differ."""
    expected = reference.get(result.dag_id)
    if result.dag_id in NOT_RUN or expected is None:
        result.expected = None
        result.tasks_differ = {}
        return result
    result.expected = expected["state"]
    same_run = result.dag_id in STATE_ONLY
    result.tasks_differ = {} if same_run else compare(expected, result.tasks)
    return result


def run_examples(wheels: list[Path], work: Path, only: list[str] | None = None) -> list[FileReport]:
    """Load the examples into a DAGs folder under ``work``, then test each DAG that loads."""
    folder = work / "dags"
    names = write_dags_folder(wheels, folder, only)
    env = tradewind_env(work, folder)
    os.environ["TRADEWIND_DAGS_FOLDER"] = str(folder)  # airflow.example_dags, in this process
    reference = read_reference()["dags"]
    bag = DagBag(folder)
    reports = []
    for name in names:
        before = set(bag.dags)
        bag.add_file(folder / name)
        report = FileReport(name, warnings=bag.spellings.get(str(folder / name), []))
        if str(folder / name) in bag.import_errors:
            report.error = bag.import_errors[str(folder / name)][0]
        report.dags = [DagOutcome(d, None) for d in sorted(set(bag.dags) - before)]
        reports.append(report)
    outcomes = [o for r in reports for o in r.dags]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(lambda o: test_one(o.dag_id, env, reference), outcomes)
        by_id = {o.dag_id: o for o in done}
    for report in reports:
        report.dags = [by_id[o.dag_id] for o in report.dags]
    return reports


_DECLARED = re.compile(r"^\s*(?:with DAG\(|@dag\b|@asset\b|\w+\s*=\s*DAG\()", re.MULTILINE)


def declared_dags(source: str) -> int:
    """How many DAGs a file declares, counted in Airflow's terms: a file that does not load
    still counts its DAGs."""
    return len(_DECLARED.findall(source))


def summary(reports: list[FileReport], reference: dict[str, Any]) -> dict[str, int]:
    dags = [outcome for report in reports for outcome in report.dags]
    return {
        "files": len(reports),
        "files_loading": sum(report.error is None for report in reports),
        "files_with_airflow2_spellings": sum(bool(report.warnings) for report in reports),
        "dags_in_airflow": len(reference) + len(NOT_RUN),
        "dags_loading": len(dags),
        "dags_as_in_airflow": sum(outcome.as_in_airflow for outcome in dags),
        "dags_not_run": sum(outcome.expected is None for outcome in dags),
    }


def print_table(reports: list[FileReport], counts: dict[str, int]) -> None:
    for report in reports:
        print(f"{report.name:60} {'loads' if report.error is None else report.error}")
        for dag in report.dags:
            mark = "ok " if dag.as_in_airflow else ("-- " if dag.expected is None else "BAD")
            seen = f"{dag.outcome} (Airflow: {dag.expected})" if dag.expected else ""
            differ = (
                f" tasks differ (Airflow, Tradewind): {dag.tasks_differ}"
                if dag.tasks_differ
                else ""
            )
            note = "" if dag.as_in_airflow else f"  {dag.detail}{differ}"
            print(f"    {mark} {dag.dag_id:52} {seen}{note}")
    print(
        f"\n{counts['dags_as_in_airflow']} of {counts['dags_in_airflow']} DAGs end as in Airflow; "
        f"{counts['files_loading']} of {counts['files']} files load "
        f"({counts['dags_loading']} DAGs, {counts['dags_not_run']} not run)"
    )


def run_all(cache: Path, only: list[str] | None) -> list[FileReport]:
    try:
        wheels = download_wheels(cache)
    except WheelUnavailable as error:
        sys.exit(str(error))
    with tempfile.TemporaryDirectory(prefix="tradewind-airflow-") as work:
        return run_examples(wheels, Path(work), only)


def rejudged(results: Path) -> list[FileReport]:
    """The reports of a run written before, judged again against the reference as it is now."""
    reference = read_reference()["dags"]
    reports = []
    for kept in json.loads(results.read_text())["files"]:
        dags = [judged(DagOutcome(**dag), reference) for dag in kept.pop("dags")]
        reports.append(FileReport(**kept, dags=dags))
    return reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", nargs="*", help="File stems to run (default: all).")
    parser.add_argument(
        "--rejudge", action="store_true", help="Compare the last run's outcomes again, run nothing."
    )
    options = parser.parse_args()
    results = ROOT / "bench" / "results" / "airflow_examples.json"
    reports = rejudged(results) if options.rejudge else run_all(options.cache, options.only)
    if options.only and results.exists():  # the files run replace theirs in the last run's
        ran = {report.name for report in reports}
        reports = sorted(
            [kept for kept in rejudged(results) if kept.name not in ran] + reports,
            key=lambda report: report.name,
        )
    counts = summary(reports, read_reference()["dags"])
    print_table(reports, counts)
    document = {"counts": counts, "files": [asdict(report) for report in reports]}
    results.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
