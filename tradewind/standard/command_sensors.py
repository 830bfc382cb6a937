"""``BashSensor`` and ``PythonSensor``: poke by running a command or calling a function.

``BashSensor`` runs ``bash_command`` (templated) as a script in a fresh temporary folder, its
output copied to the log: exit 0 is done; with ``retry_exit_code`` that code pokes again and any
other fails the task at once, without it any non-zero exit pokes again, as in Airflow.
``PythonSensor`` calls ``python_callable`` as ``PythonOperator`` does (``op_args``,
``op_kwargs``, ``templates_dict``, the context keys it names); a truthy result or a done
``PokeReturnValue`` ends the wait.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from tradewind.exceptions import DagDefinitionError, FailTask
from tradewind.sensor_operator import BaseSensorOperator
from tradewind.sensors import PokeReturnValue
from tradewind.standard.python import determine_kwargs


class BashSensor(BaseSensorOperator):
    """``BashSensor(task_id=..., bash_command=..., env=None, retry_exit_code=None)``."""

    template_fields: ClassVar[Sequence[str]] = ("bash_command", "env")

    def __init__(
        self,
        *,
        bash_command: str,
        env: Mapping[str, str] | None = None,
        output_encoding: str = "utf-8",
        retry_exit_code: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.bash_command = bash_command
        self.env = env
        self.output_encoding = output_encoding
        self.retry_exit_code = retry_exit_code
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> bool:
        code = self._run()
        print(f"command exited with return code {code}", flush=True)
        if code == 0:
            return True
        if self.retry_exit_code is not None and code != self.retry_exit_code:
            raise FailTask(f"task {self.task_id}: the sensor's command exited {code}")
        return False

    def _run(self) -> int:
        env = None if self.env is None else {str(k): str(v) for k, v in self.env.items()}
        with tempfile.TemporaryDirectory(prefix="tradewind-sensor-") as folder:
            script = Path(folder) / f"{self.task_id}.sh"
            script.write_text(self.bash_command)
            with subprocess.Popen(
                ["bash", str(script)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=folder,
                env=env,
            ) as child:
                assert child.stdout is not None
                for raw in child.stdout:
                    line = raw.decode(self.output_encoding, errors="backslashreplace")
                    sys.stdout.write(line.rstrip("\n") + "\n")
                sys.stdout.flush()
                return child.wait()


class PythonSensor(BaseSensorOperator):
    """``PythonSensor(task_id=..., python_callable=..., op_args=..., op_kwargs=...)``."""

    template_fields: ClassVar[Sequence[str]] = ("templates_dict", "op_args", "op_kwargs")

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        op_args: Sequence[Any] | None = None,
        op_kwargs: Mapping[str, Any] | None = None,
        templates_dict: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not callable(python_callable):
            raise DagDefinitionError(
                f"PythonSensor {kwargs.get('task_id', '')}: python_callable must be callable"
            )
        self.python_callable = python_callable
        self.op_args = list(op_args or ())
        self.op_kwargs = dict(op_kwargs or {})
        self.templates_dict = templates_dict
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> PokeReturnValue:
        context.update(self.op_kwargs)
        context["templates_dict"] = self.templates_dict
        keywords = determine_kwargs(self.python_callable, self.op_args, context)
        result = self.python_callable(*self.op_args, **keywords)
        return result if isinstance(result, PokeReturnValue) else PokeReturnValue(bool(result))
