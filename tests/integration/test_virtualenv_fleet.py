"""A virtualenv task in a real fleet whose workers reuse task processes: it gets a fresh one."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

VENV_DAGS = """
import os

from tradewind import DAG, task


@task
def before():
    return os.getpid()


@task.virtualenv(requirements=[], system_site_packages=False)
def in_venv():
    import os

    return os.getppid()  # the task process that started this interpreter


with DAG("venv_fresh"):
    before() >> in_venv()
"""


def test_a_virtualenv_task_never_runs_in_a_reused_task_process(make_fleet, tmp_path: Path) -> None:
    dags = tmp_path / "venv_dags"
    dags.mkdir()
    (dags / "venv.py").write_text(textwrap.dedent(VENV_DAGS))
    fleet = make_fleet(dags, TRADEWIND_TASK_PROCESS_REUSE="3")
    fleet.start_worker(concurrency=1)  # one pool process: the second try could reuse the first's
    fleet.start_scheduler()
    fleet.trigger("venv_fresh", "r1")

    assert fleet.wait_run("venv_fresh", "r1", timeout=180) == "success"
    before = json.loads(fleet.xcom("venv_fresh", "r1", "before") or "null")
    venv_parent = json.loads(fleet.xcom("venv_fresh", "r1", "in_venv") or "null")
    assert isinstance(before, int) and isinstance(venv_parent, int)
    assert venv_parent != before
    assert (tmp_path / "venvs").is_dir()
