"""``@task.bash`` as the standard provider's example writes it: an upstream result in ``env``
(through ``.override``), and ``task_instance_key_str`` named as a parameter."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Callable

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

DAG_FILE = """
from airflow.sdk import dag, task


@dag(schedule=None)
def bash_env_results():
    @task(multiple_outputs=True)
    def describe():
        return {"count": "3"}

    @task.bash
    def show() -> str:
        return 'test "$COUNT" = 3 && echo "found $COUNT"'

    @task.bash
    def key(task_instance_key_str) -> str:
        return f'case "{task_instance_key_str}" in bash_env_results__key__*) exit 0;; esac; exit 1'

    show.override(env={"COUNT": describe()["count"]}, append_env=True)()
    key()


bash_env_results()
"""


def test_an_upstream_result_in_env_and_the_instance_key(env: CliEnv, run_cli: RunCli) -> None:
    (env.dags / "bash_env_results.py").write_text(textwrap.dedent(DAG_FILE))

    done = run_cli("dags", "test", "bash_env_results", timeout=180)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "found 3" in done.stdout
