"""The supervisor end to end: real forked task processes over a real socket, a real SQLite store.

Each test writes the DAGs below into its own folder, triggers a run and passes each queued try to
``worker.supervisor.execute.execute`` as a Celery worker would; tries that a finished try queues
(downstream tasks, due retries) come back through ``publish`` and run next.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from broker_config import TaskInstanceMessage, message_of
from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun
from state.engine.runs import clear_task_instances
from state.engine.scheduling import Enqueue
from state.engine.try_life import claim_try
from tests.state.harness import Home, tradewind_home
from worker import wire as p
from worker.process import reap_finished
from worker.supervisor.execute import execute
from worker.supervisor.logs import TryLog, log_path
from worker.supervisor.loop import SupervisorLoop
from worker.supervisor.requests import HANDLERS
from worker.supervisor.try_context import TryContext

TI = TaskInstanceState
ROOT = Path(__file__).resolve().parents[2]

DAGS = """
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tradewind import DAG, FailTask, SkipTask, dag, get_current_context, task

OUT = Path({out!r})


def note(name, text):
    with open(OUT / name, "a") as f:
        f.write(f"{{text}}\\n")


@task
def produce():
    return {{"n": 41, "words": ["a", "b"]}}


@task
def consume(value):
    return value["n"] + 1


with DAG("xcom_pass"):
    consume(produce())


def on_failure(context):
    error = type(context["exception"]).__name__
    note("failure_callback", f"{{context['ti'].try_number}} {{error}}")


@task(retries=1, retry_delay=0, on_failure_callback=on_failure)
def boom():
    note("boom_tries", "ran")
    raise ValueError("boom went the task")


with DAG("flaky"):
    boom()


@task(retries=3, on_failure_callback=on_failure)
def refuse():
    raise FailTask("bad input, retrying will not help")


with DAG("fail_now"):
    refuse()


@task
def a_set():
    return {{1, 2}}


@task
def an_object():
    return {{"fine": [1, object()]}}


with DAG("non_json"):
    a_set()
    an_object()


@task(retries=1, execution_timeout=dt.timedelta(seconds=2))
def slow():
    child = subprocess.Popen(["sleep", "60"])
    note("grandchild", str(child.pid))
    note("slow_pid", str(os.getpid()))
    time.sleep(60)
    note("slow_finished", "yes")


with DAG("timeout"):
    slow()


@task(execution_timeout=dt.timedelta(seconds=1.5))
def stubborn():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    note("stubborn_pid", str(os.getpid()))
    time.sleep(60)


with DAG("ignores_sigterm"):
    stubborn()


@task
def chatty():
    print("hello on stdout")
    print("hello on stderr", file=sys.stderr)
    print("no newline at the end", end="")


with DAG("chatty"):
    chatty()


@task
def count():
    note("count", "ran")


with DAG("count"):
    count()


@task
def sleepy():
    note("sleepy_pid", str(os.getpid()))
    time.sleep(60)
    note("sleepy_finished", "yes")


with DAG("sleepy"):
    sleepy()


def note_failure(context):
    note("failure_callback", "ran")


@task(on_failure_callback=note_failure)
def asks_and_waits():
    from tradewind import Variable

    note("asking", "yes")
    Variable.get("never_answered")


with DAG("asks_and_waits"):
    asks_and_waits()


@task
def steady():
    time.sleep(1)


with DAG("steady"):
    steady()


@task
def noter():
    note("noter_pid", str(os.getpid()))


with DAG("noter"):
    noter()


@task
def skipper():
    raise SkipTask("nothing to do today")


@task
def after_skip():
    note("after_skip", "ran")


with DAG("skip"):
    skipper() >> after_skip()


@task
def with_context(ti=None, params=None, dag_run=None):
    context = get_current_context()
    return {{
        "task_id": ti.task_id,
        "try_number": ti.try_number,
        "params": params,
        "run_id": context["run_id"],
        "same_ti": context["ti"] is ti,
        "conf": dag_run["conf"],
    }}


with DAG("context", params={{"x": 1, "y": 2}}):
    with_context()
"""


@contextmanager
def supervised_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dags: str) -> Iterator[Home]:
    """A store with ``dags`` synced (``{out}`` in them: the folder tasks note things in)."""
    with tradewind_home(
        tmp_path, monkeypatch, heartbeat_seconds="0.2", kill_grace_seconds="0.5"
    ) as made:
        out = tmp_path / "out"
        out.mkdir()
        made.write_dag(dags.format(out=str(out)))
        result = made.sync()
        assert result.import_errors == {}
        yield made


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with supervised_home(tmp_path, monkeypatch, DAGS) as made:
        yield made


def out(home: Home, name: str) -> list[str]:
    path = home.root / "out" / name
    return path.read_text().splitlines() if path.exists() else []


def run_tries(home: Home, run_pk: int, pending: list[Enqueue], limit: int = 10) -> list[str]:
    """Execute queued tries, and those they queue, until none is left; returns the outcomes.

    When no message is left, a scheduler pass runs as the loop would: it queues the retries that
    are due and settles the run (a supervisor leaves both to the scheduler for a leaf task).
    """
    outcomes: list[str] = []
    while pending:
        assert len(outcomes) < limit, "more tries than the test expects"
        message = message_of(pending.pop(0))
        outcomes.append(execute(message, home.settings, publish=pending.extend))
        if not pending:
            pending = home.schedule(run_pk)
    return outcomes


def run_one(home: Home, enqueue: Enqueue) -> str:
    """Execute one try; what it queues is dropped (the rows stay queued in the store)."""
    return execute(message_of(enqueue), home.settings, publish=lambda _: None)


def start(
    home: Home, dag_id: str, conf: dict[str, object] | None = None
) -> tuple[int, list[Enqueue]]:
    run_pk = home.trigger(dag_id, conf=conf)
    return run_pk, home.schedule(run_pk)


def try_log(home: Home, run_pk: int, task_id: str, try_number: int) -> str:
    run = home.run(run_pk)
    path = log_path(home.settings.logs_folder, run.dag_id, run.run_id, task_id, -1, try_number)
    return path.read_text()


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def pid_gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or during the read
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_dag_passes_its_xcom_from_one_task_to_the_next(home: Home) -> None:
    run_pk, pending = start(home, "xcom_pass")

    assert run_tries(home, run_pk, pending) == ["success", "success"]

    xcoms = home.xcoms(run_pk)
    assert json.loads(xcoms[("produce", "return_value")]) == {"n": 41, "words": ["a", "b"]}
    assert json.loads(xcoms[("consume", "return_value")]) == 42
    assert home.run_state(run_pk) == DagRunState.SUCCESS
    ti = home.ti(run_pk, "consume")
    assert (ti.try_number, ti.pid, ti.error) == (1, os.getpid(), None)
    assert ti.start_date is not None and ti.end_date is not None


def test_a_raising_task_is_retried_then_failed_and_its_failure_callback_runs_once(
    home: Home,
) -> None:
    run_pk, [first] = start(home, "flaky")

    published: list[Enqueue] = []
    assert execute(message_of(first), home.settings, publish=published.extend) == "up_for_retry"
    ti = home.ti(run_pk, "boom")
    assert ti.error == "ValueError: boom went the task"
    assert out(home, "failure_callback") == []  # tries were left: not a final failure
    assert home.run_state(run_pk) == DagRunState.RUNNING
    [retry] = published  # retry_delay=0: the end's own pass queued the retry at once
    assert (retry.ti_id, retry.try_number) == (first.ti_id, 2)
    assert run_tries(home, run_pk, [retry]) == ["failed"]
    ti = home.ti(run_pk, "boom")
    assert (ti.state, ti.try_number, ti.error) == (TI.FAILED, 2, "ValueError: boom went the task")
    assert ti.next_retry_at is None
    assert out(home, "boom_tries") == ["ran", "ran"]
    assert out(home, "failure_callback") == ["2 ValueError"]
    assert home.run_state(run_pk) == DagRunState.FAILED
    assert "ValueError: boom went the task" in try_log(home, run_pk, "boom", 1)


def test_fail_task_fails_at_once_without_using_the_retries(home: Home) -> None:
    run_pk, pending = start(home, "fail_now")
    assert run_tries(home, run_pk, pending) == ["failed"]
    ti = home.ti(run_pk, "refuse")
    assert (ti.state, ti.try_number, ti.next_retry_at) == (TI.FAILED, 1, None)
    assert ti.error == "FailTask: bad input, retrying will not help"
    assert out(home, "failure_callback") == ["1 FailTask"]


@pytest.mark.parametrize(("task_id", "type_name"), [("a_set", "set"), ("an_object", "object")])
def test_a_value_json_cannot_hold_fails_the_try_naming_its_type(
    home: Home, task_id: str, type_name: str
) -> None:
    run_pk, pending = start(home, "non_json")
    assert run_tries(home, run_pk, pending) == ["failed", "failed"]
    ti = home.ti(run_pk, task_id)
    assert ti.state == TI.FAILED
    assert ti.error is not None and f"a value of type {type_name}" in ti.error
    assert (task_id, "return_value") not in home.xcoms(run_pk)


def test_execution_timeout_kills_the_task_and_the_processes_it_started(home: Home) -> None:
    run_pk, pending = start(home, "timeout")

    assert run_tries(home, run_pk, pending[:1], limit=1) == ["up_for_retry"]

    [grandchild] = [int(pid) for pid in out(home, "grandchild")]
    [task_pid] = [int(pid) for pid in out(home, "slow_pid")]
    assert wait_until(lambda: pid_gone(grandchild)), "the task's own child outlived the timeout"
    assert wait_until(lambda: pid_gone(task_pid))  # exiting when its end was recorded
    assert out(home, "slow_finished") == []
    ti = home.ti(run_pk, "slow")
    assert ti.state == TI.UP_FOR_RETRY
    assert ti.error == "execution_timeout of 2s exceeded"
    assert ti.next_retry_at is not None and ti.end_date is not None
    assert ti.next_retry_at - ti.end_date == dt.timedelta(seconds=300)  # the default retry_delay
    log = try_log(home, run_pk, "slow", 1)
    assert "execution_timeout of 2s exceeded: sending SIGTERM to the task's process group" in log


def test_a_task_that_ignores_sigterm_is_killed_after_the_grace(home: Home) -> None:
    run_pk, pending = start(home, "ignores_sigterm")

    assert run_tries(home, run_pk, pending) == ["failed"]

    [task_pid] = [int(pid) for pid in out(home, "stubborn_pid")]
    assert wait_until(lambda: pid_gone(task_pid))  # exiting when its end was recorded
    ti = home.ti(run_pk, "stubborn")
    assert (ti.state, ti.error) == (TI.FAILED, "execution_timeout of 1.5s exceeded")
    assert "still running after SIGTERM: sending SIGKILL" in try_log(home, run_pk, "stubborn", 1)


def test_the_supervisor_heartbeats_while_the_task_runs(home: Home) -> None:
    run_pk, pending = start(home, "steady")
    assert run_tries(home, run_pk, pending) == ["success"]
    ti = home.ti(run_pk, "steady")
    assert ti.start_date is not None and ti.last_heartbeat is not None
    # The claim wrote both at once; a later heartbeat moved last_heartbeat on.
    assert ti.last_heartbeat - ti.start_date >= dt.timedelta(seconds=0.2)


def test_stdout_and_stderr_lines_land_in_the_try_log(home: Home) -> None:
    run_pk, pending = start(home, "chatty")
    assert run_tries(home, run_pk, pending) == ["success"]
    log = try_log(home, run_pk, "chatty", 1).splitlines()
    assert any(line.endswith("] stdout: hello on stdout") for line in log)
    assert any(line.endswith("] stderr: hello on stderr") for line in log)
    assert any(line.endswith("] stdout: no newline at the end") for line in log)
    assert log[-1].endswith("supervisor: try 1 ended success")
    assert log[-2].endswith("stdout: no newline at the end")  # the task's last words come first


def test_the_try_log_keeps_a_character_split_between_two_reads(tmp_path: Path) -> None:
    log = TryLog(tmp_path / "1.log")
    data = "naïve café ✓\nlast".encode()
    for n in range(len(data)):
        log.feed("stdout", data[n : n + 1])
    log.end("stdout")
    log.line("supervisor", "done")
    log.close()
    lines = (tmp_path / "1.log").read_text().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == [
        "stdout: naïve café ✓",
        "stdout: last",
        "supervisor: done",
    ]


def test_the_try_log_masks_secrets(tmp_path: Path) -> None:
    log = TryLog(tmp_path / "1.log")
    log.add_secret("hunter2")
    log.add_secret("ab")  # too short to mask: it would hide half the log
    log.feed("stdout", b"password=hunter2 tab\n")
    log.close()
    assert (tmp_path / "1.log").read_text().endswith("stdout: password=*** tab\n")


def test_a_duplicate_of_a_finished_try_is_dropped_and_runs_nothing(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    run_pk, [enqueue] = start(home, "count")
    message = message_of(enqueue)
    assert run_one(home, enqueue) == "success"

    with caplog.at_level(logging.WARNING, logger="worker.supervisor.execute"):
        assert execute(message, home.settings, publish=lambda _: None) == "dropped"

    assert out(home, "count") == ["ran"]
    assert home.ti(run_pk, "count").state == TI.SUCCESS
    [record] = [r for r in caplog.records if r.name == "worker.supervisor.execute"]
    assert "dropped message for count/" in record.getMessage()
    assert "stale or duplicate: task instance is success at try 1" in record.getMessage()


def test_a_duplicate_of_a_try_running_elsewhere_is_dropped(home: Home) -> None:
    run_pk, [enqueue] = start(home, "count")
    message = message_of(enqueue)
    with session_scope(home.url) as session:
        holder = claim_try(session, message)  # another worker holds it
    assert not isinstance(holder, str)

    assert execute(message, home.settings, publish=lambda _: None) == "dropped"

    assert out(home, "count") == []
    ti = home.ti(run_pk, "count")
    assert (ti.state, ti.fence_token) == (TI.RUNNING, holder.fence.token)


def test_a_message_of_a_stale_try_is_dropped(home: Home) -> None:
    run_pk, [first] = start(home, "flaky")
    run_one(home, first)
    home.schedule(run_pk)
    # The try-1 message arrives again after try 2 was queued.
    ti = home.ti(run_pk, "boom")
    assert (ti.state, ti.try_number) == (TI.QUEUED, 2)

    assert execute(message_of(first), home.settings, publish=lambda _: None) == "dropped"
    assert out(home, "boom_tries") == ["ran"]
    assert home.ti(run_pk, "boom").state == TI.QUEUED


def test_a_message_of_an_unknown_task_instance_is_dropped(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    message = TaskInstanceMessage(ti_id=999, try_number=1, dag_id="d", run_id="r", task_id="t")
    with caplog.at_level(logging.WARNING, logger="worker.supervisor.execute"):
        assert execute(message, home.settings, publish=lambda _: None) == "dropped"
    assert "unknown task instance 999" in caplog.text


CLEARER = """
import sys, time
from pathlib import Path
from state.core.db import session_scope
from state.core.models import DagRun
from state.engine.runs import clear_task_instances

url, started, run_pk = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + 60
while not started.exists() and time.monotonic() < deadline:
    time.sleep(0.02)
with session_scope(url) as session:
    print(clear_task_instances(session, session.get_one(DagRun, run_pk)))
"""


def test_clearing_a_running_task_instance_kills_the_task_and_records_nothing(
    home: Home,
) -> None:
    run_pk, [enqueue] = start(home, "sleepy")
    started = home.root / "out" / "sleepy_pid"
    clearer = subprocess.Popen(
        [sys.executable, "-c", CLEARER, home.url, str(started), str(run_pk)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        outcome = execute(message_of(enqueue), home.settings, publish=lambda _: None)
    finally:
        printed, _ = clearer.communicate(timeout=60)
    assert printed.strip() == "1"

    assert outcome == "lost"
    [task_pid] = [int(pid) for pid in out(home, "sleepy_pid")]
    assert wait_until(lambda: pid_gone(task_pid))  # exiting when its end was recorded
    assert out(home, "sleepy_finished") == []
    ti = home.ti(run_pk, "sleepy")
    # The clear stands: nothing of the killed try was written over it.
    assert (ti.state, ti.try_number, ti.generation) == (TI.NONE, 1, 1)
    assert (ti.error, ti.end_date, ti.fence_token) == (None, None, None)
    log = try_log(home, run_pk, "sleepy", 1)
    assert "the try no longer holds its task instance" in log
    assert "nothing recorded" in log


def test_a_skip_exception_skips_the_task_and_its_all_success_downstream(home: Home) -> None:
    run_pk, pending = start(home, "skip")
    assert run_tries(home, run_pk, pending) == ["skipped"]
    assert home.ti(run_pk, "skipper").error == "nothing to do today"
    home.schedule(run_pk)
    assert home.states(run_pk) == {"skipper": TI.SKIPPED, "after_skip": TI.SKIPPED}
    assert out(home, "after_skip") == []
    assert home.run_state(run_pk) == DagRunState.SUCCESS


def test_the_task_gets_its_context_by_parameter_and_by_get_current_context(home: Home) -> None:
    run_pk, pending = start(home, "context", conf={"x": 5})
    assert run_tries(home, run_pk, pending) == ["success"]
    run = home.run(run_pk)
    value = json.loads(home.xcoms(run_pk)[("with_context", "return_value")])
    assert value == {
        "task_id": "with_context",
        "try_number": 1,
        "params": {"x": 5, "y": 2},
        "run_id": run.run_id,
        "same_ti": True,
        "conf": {"x": 5},  # dag_run.conf is the trigger's conf alone, as in Airflow
    }


def test_a_task_that_said_it_succeeded_and_closed_its_channels_is_not_waited_for(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The task process (a fork of this one) lingers in its exit, as a large process does while
    # the kernel frees its memory: here for 8 s, with its channels already closed.
    real_exit = os._exit

    def lingering_exit(code: int) -> None:
        time.sleep(8)
        real_exit(code)

    monkeypatch.setattr(os, "_exit", lingering_exit)
    run_pk, [enqueue] = start(home, "noter")
    started = time.monotonic()

    assert run_one(home, enqueue) == "success"

    assert time.monotonic() - started < 6  # not the 8 s exit
    monkeypatch.setattr(os, "_exit", real_exit)
    assert home.ti(run_pk, "noter").state == TI.SUCCESS
    # Left to finish its exit; reaped (and its group killed) once it is gone.
    [task_pid] = [int(pid) for pid in out(home, "noter_pid")]
    assert not pid_gone(task_pid)

    def reaped() -> bool:
        reap_finished()
        return not Path(f"/proc/{task_pid}").exists()

    assert wait_until(reaped, seconds=20)


def test_a_fault_of_the_supervisor_fails_the_try_at_once_and_stops_its_task(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_pk, [enqueue] = start(home, "sleepy")
    started = home.root / "out" / "sleepy_pid"

    def broken_loop(self: SupervisorLoop) -> None:
        assert wait_until(started.exists)  # the task runs, then its supervisor fails
        raise RuntimeError("a bug in the loop\nsecond line")

    monkeypatch.setattr(SupervisorLoop, "run", broken_loop)

    assert run_one(home, enqueue) == "failed"  # one try: no retry left

    ti = home.ti(run_pk, "sleepy")
    assert ti.error == "the supervisor failed: RuntimeError: a bug in the loop"
    [task_pid] = [int(pid) for pid in out(home, "sleepy_pid")]
    assert wait_until(lambda: pid_gone(task_pid)), "the task outlived its supervisor's failure"
    assert "the supervisor failed: RuntimeError" in try_log(home, run_pk, "sleepy", 1)


def test_a_try_given_up_mid_request_runs_no_failure_callback_in_its_task(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_pk, [enqueue] = start(home, "asks_and_waits")

    def clear_and_never_answer(ctx: TryContext, request: p.GetVariable) -> None:
        # The try is taken away while the task waits for this reply: the next heartbeat sees
        # it, and the SIGTERM then cuts the request in half.
        with session_scope(home.url) as session:
            assert clear_task_instances(session, session.get_one(DagRun, run_pk)) == 1
        return None

    monkeypatch.setitem(HANDLERS, p.GetVariable, clear_and_never_answer)

    assert run_one(home, enqueue) == "lost"

    assert out(home, "asking") == ["yes"]
    # Whoever gave the try up answers for its callbacks (here a clear: nobody); never the task.
    log = try_log(home, run_pk, "asks_and_waits", 1)
    assert out(home, "failure_callback") == [], log
    assert "its try no longer holds its task instance" in log
