"""``tradewind dags check``: the migration report of a DAG folder written for Airflow.

For each file: does it load, which DAGs it defines, the Airflow 2 spellings it used (accepted,
each with Airflow 3's), or the one line saying what was refused and why. A team reads it before
switching; it exits 1 while a file is refused, so it can gate a folder in CI. It needs no store
and no broker: it only imports the files, each in a child process as the scheduler does, so a
file that exits, crashes or hangs is refused with its cause and the report goes on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from cli.common import settings_or_exit
from cli.render import make_console
from tradewind.airflow_paths import airflow_installed
from tradewind.dag_processor import DagFolder
from tradewind.loader import dag_files
from tradewind.settings import Settings


def check(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Per DAG file: loads, loads with Airflow 2 spellings (and what to write), or refused (why)."""
    settings = settings_or_exit()
    folder = settings.resolved_dags_folder
    bag = DagFolder.parse(folder)
    files = [file_report(bag, path) for path in sorted(dag_files(folder))]
    refused = sum(report["status"] == "refused" for report in files)
    if as_json:
        document = {"dags_folder": str(folder), "airflow_imports": imports_line(settings)}
        typer.echo(json.dumps(document | {"files": files}, indent=2))
    else:
        print_report(folder, imports_line(settings), files)
    if refused:
        raise typer.Exit(1)


def file_report(bag: DagFolder, path: Path) -> dict[str, Any]:
    key = str(path)
    error = bag.import_errors.get(key)
    spellings = bag.spellings.get(key, [])
    status = "refused" if error else ("warnings" if spellings else "loads")
    return {
        "file": str(path.relative_to(bag.folder)),
        "status": status,
        "dags": sorted(d.dag_id for d in bag.dags.values() if d.fileloc == key),
        "warnings": spellings,
        "error": error[0] if error else None,
    }


def imports_line(settings: Settings) -> str:
    """What ``airflow.*`` is in Tradewind's processes, as the settings and this machine make it."""
    version = airflow_installed()
    if settings.airflow_imports == "airflow":
        return f"Airflow's own (TRADEWIND_AIRFLOW_IMPORTS=airflow; apache-airflow {version})"
    beside = f"; apache-airflow {version} installed beside it" if version else ""
    return f"Tradewind's names{beside}"


_STYLE = {"loads": "green", "warnings": "yellow", "refused": "red"}


def print_report(folder: Path, imports: str, files: list[dict[str, Any]]) -> None:
    console = make_console()
    console.print(f"DAGs folder: {folder}")
    console.print(f"airflow.* imports: {imports}")
    table = Table("file", "status", "DAGs", "what to know")
    for report in files:
        said = report["error"] or "; ".join(report["warnings"])
        table.add_row(
            Text(report["file"]),
            Text(report["status"], style=_STYLE[report["status"]]),
            Text(", ".join(report["dags"])),
            Text(said or ""),
        )
    console.print(table)
    counts = {s: sum(r["status"] == s for r in files) for s in _STYLE}
    console.print(
        f"{len(files)} files: {counts['loads']} load, {counts['warnings']} load with Airflow 2 "
        f"spellings, {counts['refused']} refused"
    )
