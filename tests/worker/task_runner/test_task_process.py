"""What a forked task process starts with: signals, the death signal, logging, its parameters.

The task process is set up with shortcuts that save copy-on-write faults (worker/process.py,
worker/task_runner/runner.py); these tests pin that each shortcut gives what the plain call would.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from broker_config import message_of
from tests.state.harness import Home, tradewind_home
from worker import process as process_module
from worker.supervisor.execute import execute
from worker.supervisor.logs import log_path
from worker.task_runner import runner
from worker.task_runner.runner import parameter_names

DAGS = """
import ctypes
import logging
import signal
import time

from tradewind import DAG, task


@task
def report():
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    death_signal = ctypes.c_int()
    prctl(2, ctypes.byref(death_signal))  # PR_GET_PDEATHSIG
    logging.getLogger("task.report").info("an info line")
    logging.getLogger("task.report").debug("a debug line")
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1)]
    return {
        "death_signal": death_signal.value,
        "default_handlers": all(h == signal.SIG_DFL for h in handlers),
        "sigterm_handled": callable(signal.getsignal(signal.SIGTERM)),
    }


with DAG("report"):
    report()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch) as made:
        made.write_dag(DAGS)
        assert made.sync().import_errors == {}
        yield made


@pytest.fixture
def worker_signals() -> Iterator[None]:
    """Python handlers in the worker, as a Celery pool process has them."""

    def handler(signum: int, frame: object) -> None:
        raise AssertionError("the worker's handler ran")

    signums = (signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1)
    before = [signal.signal(signum, handler) for signum in signums]
    yield
    for signum, old in zip(signums, before, strict=True):
        signal.signal(signum, old)


@pytest.mark.parametrize("worker_level", [logging.WARNING, logging.INFO])
def test_a_task_process_has_default_signals_the_death_signal_and_info_logging(
    home: Home, worker_signals: None, worker_level: int
) -> None:
    root = logging.getLogger()
    level = root.level
    root.setLevel(worker_level)
    try:
        run_pk = home.trigger("report")
        [enqueue] = home.schedule(run_pk)
        assert execute(message_of(enqueue), home.settings, publish=lambda _: None) == "success"
    finally:
        root.setLevel(level)
    value = json.loads(home.xcoms(run_pk)[("report", "return_value")])
    assert value == {
        "death_signal": signal.SIGKILL,
        "default_handlers": True,
        "sigterm_handled": True,
    }
    run = home.run(run_pk)
    path = log_path(home.settings.logs_folder, run.dag_id, run.run_id, "report", -1, 1)
    log = path.read_text()
    assert "stderr: INFO task.report: an info line" in log
    assert "a debug line" not in log


def _plain(a, b=1, *args, ti=None, params, **kwargs):  # type: ignore[no-untyped-def]
    pass


def _positional_only(x, /, y, *, dag):  # type: ignore[no-untyped-def]
    pass


async def _coroutine(ti, run_id):  # type: ignore[no-untyped-def]
    pass


@functools.wraps(_positional_only)
def _wrapped(*args: Any, **kwargs: Any) -> None:
    pass


def _with_signature(ti):  # type: ignore[no-untyped-def]
    pass


_with_signature.__signature__ = inspect.signature(_coroutine)  # type: ignore[attr-defined]


class _Callable:
    def __call__(self, ti: object, params: object = None) -> None:
        pass


CALLABLES: list[Callable[..., Any]] = [
    _plain,
    _positional_only,
    _coroutine,
    _wrapped,
    _with_signature,
    lambda ti, dag=None: None,
    _Callable(),
    functools.partial(_plain, 1),
]


@pytest.mark.parametrize("function", CALLABLES)
def test_parameter_names_are_those_of_inspect_signature(function: Callable[..., Any]) -> None:
    assert set(parameter_names(function)) == set(inspect.signature(function).parameters)


@pytest.mark.parametrize("started", ["forked", "runtime"])
def test_a_task_process_recorded_before_its_exit_is_reaped_later(started: str) -> None:
    """What the supervisor leaves exiting (docs/protocol.md rule 4) is kept until it is reaped."""
    if started == "forked":
        process = process_module.fork_python_task(lambda comms: time.sleep(0.3) or 0)
    else:
        process = process_module.exec_runtime_task(["sleep", "0.3"])
    process_module.reap_later(process)
    assert process in process_module.unreaped()  # still running: kept, not dropped
    deadline = time.monotonic() + 10
    while process in process_module.unreaped() and time.monotonic() < deadline:
        time.sleep(0.05)
        process_module.reap_finished()
    assert process not in process_module.unreaped()
    assert process.exit_code == 0
    assert not Path(f"/proc/{process.pid}").exists()
    process_module.close_process_handles(process)


def test_a_sigterm_landing_as_sigusr2_enters_its_handler_still_knows_the_try_was_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The supervisor sends SIGUSR2 then SIGTERM; Python can run the SIGTERM handler at the first
    instruction of the SIGUSR2 one, before that sets its flag (seen: the failure callback ran)."""
    monkeypatch.setattr(runner, "_try_given_up", False)
    stopped: list[str] = []

    def sigterm_at_entry(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is runner._on_given_up.__code__:
            sys.settrace(None)
            try:
                runner._on_sigterm(signal.SIGTERM, frame)
            except runner.TaskTerminated as stop:
                stopped.append(str(stop))
                raise

    sys.settrace(sigterm_at_entry)
    try:
        with pytest.raises(runner.TaskTerminated):
            runner._on_given_up(signal.SIGUSR2, None)
    finally:
        sys.settrace(None)

    assert stopped == ["the task was stopped: its try no longer holds its task instance"]
    assert runner._try_given_up  # so fail_then_call_back leaves the callbacks alone
