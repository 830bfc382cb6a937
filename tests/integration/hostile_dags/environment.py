"""Tasks that write down the environment they were given (issue 26: no store or broker URL).

Each writes ``$TRADEWIND_HOME/environ/<name>``: the raw environment blocks of the task process
and of its parent (``/proc/.../environ``, as exec'd), and ``os.environ`` as it is now.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tradewind import dag, task


def _folder() -> Path:
    folder = Path(os.environ["TRADEWIND_HOME"]) / "environ"
    folder.mkdir(exist_ok=True)
    return folder


@task
def python_task() -> list[str]:
    folder = _folder()
    (folder / "python").write_bytes(Path("/proc/self/environ").read_bytes())
    (folder / "python-parent").write_bytes(Path(f"/proc/{os.getppid()}/environ").read_bytes())
    (folder / "python-os-environ").write_text(json.dumps(dict(os.environ)))
    print("environment:", json.dumps(dict(os.environ)))
    return sorted(os.environ)


@task.runtime(
    command=[
        "sh",
        "-c",
        'mkdir -p "$TRADEWIND_HOME/environ"; env > "$TRADEWIND_HOME/environ/runtime"',
    ]
)
def runtime_task() -> None:
    """Writes its environment, says nothing to its supervisor: it ends failed, as it should."""


@dag(dag_id="environment")
def environment():
    python_task()
    runtime_task()


environment()
