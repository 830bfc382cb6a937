"""``BashOperator(task_id=..., bash_command=...)``: the classic form of ``@task.bash``, with
every argument of the standard provider's.

Its ``bash_command``, ``env`` and ``cwd`` are template fields; it runs as ``tradewind/bash.py``
says (in ``cwd`` or a fresh temporary folder, ``env`` alone or over the task's own with
``append_env``, output decoded with ``output_encoding``; an exit code of ``skip_on_exit_code``,
99 unless told, skips, another non-zero exit fails). The last line of stdout, passed through
``output_processor``, is the XCom.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar

from tradewind.bash import SKIP_EXIT_CODE, BashOptions, check_processor, run_bash, skip_codes
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
        output_encoding: str = "utf-8",
        skip_on_exit_code: int | Collection[int] | None = SKIP_EXIT_CODE,
        cwd: str | None = None,
        output_processor: Callable[[Any], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.bash_command = bash_command
        self.env = env
        self.append_env = append_env
        self.output_encoding = output_encoding
        self.cwd = cwd
        self.skip_on_exit_code = skip_codes(skip_on_exit_code)
        self.output_processor = check_processor(
            f"BashOperator {kwargs.get('task_id', '')}", output_processor
        )
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> Any:
        how = BashOptions(
            self.env, self.append_env, self.cwd, self.skip_on_exit_code, self.output_encoding
        )
        return self.output_processor(
            run_bash(self.bash_command, how, f"task {self.task_id}", context)
        )
