"""What Airflow 3.3.2 itself makes of its example DAGs: the reference the yardstick compares with.

Builds a throwaway virtual environment with ``apache-airflow==3.3.2`` and the standard provider
(under ``~/.cache/tradewind/airflow-examples/venv``, never in the repository), points Airflow at
the same DAGs folder the yardstick writes, and runs each DAG as ``airflow dags test`` does
(``DAG.test()``), in one Airflow process: the run's state and each task instance's, by
``task_id`` and map index. Writes ``bench/results/airflow_reference.json``, which the yardstick
and its test read, so that neither needs Airflow installed.

    python bench/airflow_reference.py [--cache DIR] [--only DAG_ID ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import airflow_examples as yardstick  # noqa: E402

REFERENCE = ROOT / "bench" / "results" / "airflow_reference.json"
AIRFLOW = ["apache-airflow==3.3.2", "apache-airflow-providers-standard==1.21.0"]
RUN_SECONDS = 900

#: Run inside Airflow's venv: one ``DAG.test()`` per DAG id, in a process of its own (one DAG
#: that hangs or crashes its process is that DAG's outcome, not the others').
RUN_ONE = """
import json, sys
from sqlalchemy import select
from airflow.dag_processing.dagbag import DagBag
from airflow.models.taskinstance import TaskInstance
from airflow.utils.session import create_session

path, dag_id, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
bag = DagBag(path)
dag = bag.get_dag(dag_id)
run = dag.test(run_conf=conf or None)
with create_session() as session:
    tis = session.scalars(select(TaskInstance).where(
        TaskInstance.dag_id == dag_id, TaskInstance.run_id == run.run_id)).all()
    states = {f"{ti.task_id}[{ti.map_index}]": None if ti.state is None else str(ti.state)
              for ti in tis}
print("REFERENCE " + json.dumps({"state": str(run.state), "tasks": states}))
"""

#: Run inside Airflow's venv: the DAG ids Airflow finds in the folder, and its import errors.
LIST = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(sys.argv[1])
errors = {k: v.strip().splitlines()[-1] for k, v in bag.import_errors.items()}
files = {dag_id: bag.dags[dag_id].fileloc for dag_id in bag.dag_ids}
print("LISTED " + json.dumps({"files": files, "import_errors": errors}))
"""


def airflow_venv(cache: Path) -> Path:
    """Airflow's interpreter, in a venv built once under ``cache``."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = [str(python), "-m", "pip", "install", "-q", *AIRFLOW]
        subprocess.run(install, check=True)
    return python


def airflow_env(home: Path, folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TRADEWIND_"))}
    return env | {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(folder),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(folder / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    }


def run_in_airflow(python: Path, env: dict[str, str], path: str, dag_id: str) -> dict:
    conf = json.dumps(yardstick.CONF.get(dag_id, {}))
    command = [str(python), "-c", RUN_ONE, path, dag_id, conf]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        return {"state": "timed out", "tasks": {}}
    for line in done.stdout.splitlines():
        if line.startswith("REFERENCE "):
            return json.loads(line[len("REFERENCE ") :])
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"state": "error", "tasks": {}, "error": last[:300]}


def single_dag_folder(folder: Path, path: Path, target: Path) -> Path:
    """``folder`` with one DAG file, ``path``, and every file the examples read: ``DAG.test()``
    stores every DAG of its folder, so one DAG Airflow cannot store would fail every run."""

    def other_dag_files(directory: str, names: list[str]) -> list[str]:
        return [
            name
            for name in names
            if name.endswith(".py")
            and name != "__init__.py"
            and Path(directory) in (folder, folder / "standard")
            and Path(directory, name) != path
        ]

    shutil.copytree(folder, target, ignore=other_dag_files)
    return target


def run_alone(python: Path, env: dict[str, str], folder: Path, path: Path, dag_id: str) -> dict:
    """One DAG in a folder and an Airflow home of its own (a copy of the migrated one)."""
    work = folder.parent / "alone" / dag_id
    alone = single_dag_folder(folder, path, work / "dags")
    shutil.copytree(env["AIRFLOW_HOME"], work / "home")
    alone_env = env | {"AIRFLOW__CORE__DAGS_FOLDER": str(alone), "AIRFLOW_HOME": str(work / "home")}
    return run_in_airflow(python, alone_env, str(alone / path.relative_to(folder)), dag_id)


def listed(python: Path, env: dict[str, str], folder: Path) -> dict:
    done = subprocess.run(
        [str(python), "-c", LIST, str(folder)], env=env, capture_output=True, text=True, check=True
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("LISTED "))
    found: dict = json.loads(line[len("LISTED ") :])
    folder_text = str(folder) + "/"
    found["import_errors"] = {
        k.replace(folder_text, ""): v for k, v in found["import_errors"].items()
    }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=yardstick.DEFAULT_CACHE)
    parser.add_argument("--only", nargs="*", help="DAG ids to run (default: all).")
    parser.add_argument("--parallel", type=int, default=3, help="DAGs run at once.")
    parser.add_argument("--missing", action="store_true", help="Only DAGs with no outcome yet.")
    options = parser.parse_args()
    python = airflow_venv(options.cache)
    wheels = yardstick.download_wheels(options.cache)
    reference = yardstick.read_reference()
    with tempfile.TemporaryDirectory(prefix="airflow-reference-") as work:
        folder = Path(work) / "dags"
        yardstick.write_dags_folder(wheels, folder)
        env = airflow_env(Path(work) / "home", folder)
        migrate = [str(python), "-m", "airflow", "db", "migrate"]
        subprocess.run(migrate, env=env, check=True, capture_output=True)
        found = listed(python, env, folder)
        reference["import_errors"] = found["import_errors"]
        wanted = [d for d in options.only or sorted(found["files"]) if d not in yardstick.NOT_RUN]
        if options.missing:  # only what has no outcome yet (or timed out)
            done = {d for d, o in reference["dags"].items() if o["state"] in ("success", "failed")}
            wanted = [d for d in wanted if d not in done]

        def run(dag_id: str) -> tuple[str, dict]:
            return dag_id, run_alone(python, env, folder, Path(found["files"][dag_id]), dag_id)

        with ThreadPoolExecutor(max_workers=options.parallel) as pool:
            for dag_id, outcome in pool.map(run, wanted):
                reference["dags"][dag_id] = outcome
                print(f"{dag_id:60} {outcome['state']}", flush=True)
                REFERENCE.write_text(json.dumps(reference, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
