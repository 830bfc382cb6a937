"""``BashOperator(task_id=..., bash_command=...)``: the classic form of ``@task.bash``.

Its ``bash_command``, ``env`` and ``cwd`` are template fields; it runs as ``tradewind/bash.py``
says (exit 99 skips, another non-zero exit fails, the last line of stdout is the XCom).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, ClassVar

from tradewind.bash import SKIP_EXIT_CODE, BashOptions, run_bash, skip_codes
from tradewind.operators import BaseOperator


class BashOperator(BaseOperator):
    """``BashOperator(task_id=..., bash_command=...)``, as Airflow's classic operator."""

    template_fields: ClassVar[tuple[str, ...]] = ("bash_command", "env", "cwd")
    template_ext: ClassVar[tuple[str, ...]] = (".sh", ".bash")

    def __init__(
        self,
        *,
        bash_command: str,
        env: Mapping[str, str] | None = None,
        append_env: bool = False,
        cwd: str | None = None,
        skip_on_exit_code: int | Collection[int] | None = SKIP_EXIT_CODE,
        **kwargs: Any,
    ) -> None:
        self.bash_command = bash_command
        self.env = env
        self.append_env = append_env
        self.cwd = cwd
        self.skip_on_exit_code = skip_codes(skip_on_exit_code)
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> str | None:
        how = BashOptions(self.env, self.append_env, self.cwd, self.skip_on_exit_code)
        return run_bash(self.bash_command, how, f"task {self.task_id}")
