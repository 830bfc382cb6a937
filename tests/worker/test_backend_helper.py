"""The backend helper process on its own: a real helper, serviced by a selector loop the
test turns. One call at a time, in order; results and errors come back to the call's callback;
the helper's look-ups go to its supervisor; a helper that dies fails what waits; stopping.
"""

from __future__ import annotations

import itertools
import os
import selectors
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tradewind.settings import reload_settings
from worker import wire as p
from worker.helper.client import BackendHelper
from worker.supervisor.logs import TryLog
from worker.xcom.calls import item
from worker.xcom.object_storage import REFERENCE_KEY

from .xcom_support import address

ROOT = Path(__file__).resolve().parents[2]
LARGE = "v" * 100


@dataclass
class Supervisor:
    """The supervisor's part, played by the test: a selector loop and answers to look-ups."""

    helper: BackendHelper
    selector: selectors.BaseSelector
    markers: Path
    asked: list[p.Message] = field(default_factory=list)
    results: list[tuple[str, p.XComBackendResult]] = field(default_factory=list)

    def call(self, name: str, hook: str, *items: p.XComItem) -> None:
        finish = lambda result: self.results.append((name, result))  # noqa: E731
        self.helper.call(p.XComBackendCall(operation=hook, items=list(items)), finish)

    def turn(self, until: Callable[[], bool], seconds: float = 20.0) -> None:
        deadline = time.monotonic() + seconds
        while not until():
            assert time.monotonic() < deadline, f"not done after {seconds}s: {self.results}"
            for key, _ in self.selector.select(0.05):
                key.data(self.selector, key.fileobj)
            self.helper.on_time(time.monotonic())

    def result(self, name: str) -> p.XComBackendResult:
        return dict(self.results)[name]

    def marker(self, name: str) -> list[str]:
        path = self.markers / name
        return path.read_text().splitlines() if path.exists() else []


def answer_for(log: TryLog, asked: list[p.Message]) -> Callable[[p.Message], p.Message]:
    def answer(message: p.Message) -> p.Message:
        asked.append(message)
        if isinstance(message, p.GetConnection):
            log.add_secret("hunter2-secret")
            reply: p.Message = p.ConnectionResult(
                conn_id=message.conn_id, login="me", password="hunter2-secret"
            )
        elif isinstance(message, p.GetVariable):
            reply = p.VariableResult(key=message.key, found=True, value="noted")
        else:
            reply = p.OKResponse()
        reply.id = message.id
        return reply

    return answer


Start = Callable[..., Supervisor]


@pytest.fixture
def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Start]:
    """``start(backend="SlowBackend", store=seconds, load=..., purge=...)``: a running helper."""
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the helper imports this test's backends
    monkeypatch.setenv("TW_TEST_MARKERS", str(markers))
    monkeypatch.setenv("TRADEWIND_OBJECT_STORAGE_URL", f"file://{tmp_path}/objects")
    monkeypatch.setenv("TRADEWIND_OBJECT_STORAGE_CONN_ID", "objects")
    monkeypatch.setenv("TRADEWIND_XCOM_OBJECT_THRESHOLD_BYTES", "16")
    log = TryLog(tmp_path / "try.log")
    selector = selectors.DefaultSelector()
    started: list[Supervisor] = []

    def start_helper(backend: str = "SlowBackend", **slow_seconds: float) -> Supervisor:
        monkeypatch.setenv("TRADEWIND_XCOM_BACKEND", f"tests.worker.xcom_support.{backend}")
        for hook, seconds in slow_seconds.items():
            monkeypatch.setenv(f"TW_TEST_SLOW_{hook.upper()}", str(seconds))
        asked: list[p.Message] = []
        helper = BackendHelper.start(log)
        helper.register(selector, answer_for(log, asked))
        started.append(Supervisor(helper, selector, markers, asked))
        return started[-1]

    yield start_helper
    for supervisor in started:
        supervisor.helper.begin_stop(time.monotonic())
        supervisor.turn(supervisor.helper.finished, seconds=30)
        supervisor.helper.close()
    selector.close()
    log.close()
    reload_settings()


def stored(supervisor: Supervisor, name: str) -> object:
    result = supervisor.result(name)
    assert result.error is None, result.error
    return result.value


def test_calls_run_one_at_a_time_in_the_order_they_came(start: Start) -> None:
    supervisor = start(store=0.3)
    for n in range(3):
        supervisor.call(f"store{n}", "store", item(address(f"k{n}"), f"{n}{LARGE}"))
    assert supervisor.helper.waiting == 3
    supervisor.turn(lambda: len(supervisor.results) == 3)
    assert [name for name, _ in supervisor.results] == ["store0", "store1", "store2"]
    starts = [float(line.split()[3]) for line in supervisor.marker("calls")]
    assert [line.split()[2] for line in supervisor.marker("calls")] == ["k0", "k1", "k2"]
    # Each call started after the one before had slept its 0.3 s: never two at once.
    assert all(later - earlier >= 0.29 for earlier, later in itertools.pairwise(starts))
    for n in range(3):
        assert REFERENCE_KEY in stored(supervisor, f"store{n}")  # type: ignore[operator]


def test_load_many_keeps_the_order_of_its_rows(start: Start) -> None:
    supervisor = start()
    values = [f"{n}{LARGE}" if n % 2 else n for n in range(6)]
    for n, value in enumerate(values):
        supervisor.call(f"store{n}", "store", item(address("k", map_index=n), value))
    supervisor.turn(lambda: len(supervisor.results) == 6)
    rows = [item(address("k", map_index=n), stored(supervisor, f"store{n}")) for n in range(6)]
    order = [4, 1, 5, 0, 3, 2]
    supervisor.call("many", "load_many", *[rows[n] for n in order])
    supervisor.turn(lambda: len(supervisor.results) == 7)
    assert stored(supervisor, "many") == [values[n] for n in order]


def test_an_exception_comes_back_as_its_type_and_message(start: Start) -> None:
    supervisor = start()
    row = {REFERENCE_KEY: f"{os.environ['TRADEWIND_OBJECT_STORAGE_URL']}/gone", "bytes": 3}
    supervisor.call("missing", "load", item(address(), row))
    supervisor.call("wrong", "store")  # a store takes exactly one item
    supervisor.turn(lambda: len(supervisor.results) == 2)
    missing = supervisor.result("missing").error
    assert missing == (
        "XComBackendError: the object of XCom 'return_value' of "
        f"d/manual__2024-01-01T00:00:00+00:00/t is missing: {row[REFERENCE_KEY]}"
    )
    assert supervisor.result("wrong").error == "ValueError: a store call takes one item, got 0"


def test_a_user_backend_exception_comes_back_as_its_type_and_message(start: Start) -> None:
    supervisor = start("FailingBackend")
    supervisor.call("bad", "store", item(address("bad"), 1))
    supervisor.turn(lambda: len(supervisor.results) == 1)
    assert supervisor.result("bad").error == "ValueError: no place for 'bad'"


def test_the_helpers_lookups_are_answered_by_its_supervisor(start: Start, tmp_path: Path) -> None:
    supervisor = start("ConnectionBackend")
    supervisor.call("store", "store", item(address(), LARGE))
    supervisor.turn(lambda: len(supervisor.results) == 1)
    assert REFERENCE_KEY in stored(supervisor, "store")  # type: ignore[operator]
    # The test backend's own look-ups, then object storage's for its credentials.
    names = [type(m).__name__ for m in supervisor.asked]
    assert names == ["GetConnection", "GetVariable", "GetConnection"]
    assert supervisor.asked[0] == p.GetConnection(id=supervisor.asked[0].id, conn_id="objects")
    # The backend printed the password; its line reached the try's log masked.
    supervisor.turn(lambda: "helper connected" in (tmp_path / "try.log").read_text())
    log = (tmp_path / "try.log").read_text()
    assert "backend-helper: helper connected with password ***" in log
    assert "hunter2-secret" not in log


def test_a_helper_killed_mid_call_fails_every_waiting_call(start: Start) -> None:
    supervisor = start(load=60)
    supervisor.call("store", "store", item(address(), LARGE))
    supervisor.turn(lambda: len(supervisor.results) == 1)
    row = item(address(), stored(supervisor, "store"))
    for name in ("load1", "load2", "load3"):
        supervisor.call(name, "load", row)
    supervisor.turn(lambda: any(line.startswith("load ") for line in supervisor.marker("calls")))
    os.kill(int(supervisor.marker("helper.pid")[0]), signal.SIGKILL)

    supervisor.turn(lambda: len(supervisor.results) == 4, seconds=10)
    expected = "the backend helper process exited (killed by SIGKILL) before it answered"
    assert [supervisor.result(n).error for n in ("load1", "load2", "load3")] == [expected] * 3
    assert supervisor.helper.waiting == 0
    # A call made after the helper died fails at once, with the same reason.
    supervisor.call("late", "load", row)
    assert supervisor.result("late").error == expected


def test_stopping_an_idle_helper_sends_exit_and_it_exits_at_once(start: Start) -> None:
    supervisor = start()
    supervisor.call("store", "store", item(address(), 1))
    supervisor.turn(lambda: len(supervisor.results) == 1)
    started = time.monotonic()
    supervisor.helper.begin_stop(started)
    supervisor.turn(supervisor.helper.finished, seconds=5)
    assert time.monotonic() - started < 2
    assert supervisor.helper.process.poll() == 0


def test_stopping_a_busy_helper_waits_its_exit_timeout_then_terminates_it(start: Start) -> None:
    supervisor = start(load=60)
    supervisor.helper.exit_timeout_seconds = 1.0
    supervisor.call("load", "load", item(address(), 1))
    supervisor.turn(lambda: bool(supervisor.marker("calls")))
    started = time.monotonic()
    supervisor.helper.begin_stop(started)
    supervisor.turn(supervisor.helper.finished, seconds=10)
    assert 0.9 < time.monotonic() - started < 5
    assert supervisor.helper.process.poll() == -signal.SIGTERM
