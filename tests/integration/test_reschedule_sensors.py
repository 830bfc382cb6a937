"""Sensors in reschedule mode in a real fleet (PostgreSQL + Redis): between two pokes the try is
``up_for_reschedule`` and holds no slot, the next poke is the same try, and its timeout fails it.
``@task.sensor`` and a ``BaseSensorOperator`` subclass (in both modes) alike.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from state.core.db import session_scope
from state.engine.pools import set_pool

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

# ``gate`` (pool "one", 1 slot) waits for ``marker``, which only ``writer`` (pool "one" too)
# writes, and ``writer`` starts only after gate's first poke (``first_poke_seen``). A gate that
# held its slot between pokes would never let writer run: the run could only time out.
SENSOR_DAGS = """
from pathlib import Path

from tradewind import DAG, BaseSensorOperator, PokeReturnValue, task

FOLDER = Path({folder!r})


class MarkerSensor(BaseSensorOperator):
    # Done once the file named marker exists in FOLDER; each poke touches <marker>.poked.

    def __init__(self, *, marker, **kwargs):
        super().__init__(**kwargs)
        self.marker = marker

    def poke(self, context):
        (FOLDER / f"{{self.marker}}.poked").touch()
        done = (FOLDER / self.marker).exists()
        print(f"{{self.task_id}} poked in try {{context['ti'].try_number}}: done={{done}}")
        return PokeReturnValue(is_done=done, xcom_value=f"{{self.mode}} opened")


@task.sensor(poke_interval=0.2, timeout=120)
def poked(marker):
    return (FOLDER / f"{{marker}}.poked").exists()


@task
def mark(marker):
    (FOLDER / marker).touch()


@task.sensor(poke_interval=5, timeout=120, mode="reschedule", pool="one")
def gate(ti=None):
    (FOLDER / "poked").touch()
    done = (FOLDER / "marker").exists()
    print(f"gate poked in try {{ti.try_number}}: done={{done}}")
    return PokeReturnValue(is_done=done, xcom_value="opened")


@task.sensor(poke_interval=0.2, timeout=120)
def first_poke_seen():
    return (FOLDER / "poked").exists()


@task(pool="one")
def writer():
    (FOLDER / "marker").touch()


@task.sensor(poke_interval=0.5, timeout=2, mode="reschedule")
def never():
    return False


with DAG("reschedule_gate"):
    gate()
    first_poke_seen() >> writer()

with DAG("reschedule_timeout"):
    never()

with DAG("classic_poke"):
    MarkerSensor(task_id="wait", marker="poke_marker", poke_interval=0.2, timeout=120)
    poked("poke_marker") >> mark("poke_marker")

with DAG("classic_reschedule"):
    MarkerSensor(
        task_id="wait", marker="resched_marker", poke_interval=5, timeout=120,
        mode="reschedule", pool="one",
    )
    poked("resched_marker") >> mark.override(pool="one")("resched_marker")
"""


@pytest.fixture
def sensor_fleet(make_fleet, tmp_path: Path):
    dags = tmp_path / "sensor_dags"
    dags.mkdir()
    (dags / "sensors.py").write_text(textwrap.dedent(SENSOR_DAGS.format(folder=str(tmp_path))))
    # A wait between pokes (5 s) longer than the zombie threshold (4 s) and the queued timeout.
    fleet = make_fleet(dags, TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS="2")
    with session_scope(fleet.url) as session:
        set_pool(session, "one", 1)
    fleet.start_worker(concurrency=3)
    fleet.start_scheduler()
    return fleet


def test_a_rescheduled_sensor_frees_its_slot_and_pokes_again_in_the_same_try(
    sensor_fleet,
) -> None:
    fleet = sensor_fleet
    fleet.trigger("reschedule_gate", "r1")

    def waits_for_its_next_poke() -> bool:
        gate = fleet.task_instances("reschedule_gate", "r1")["gate"]
        return str(gate.state) == "up_for_reschedule" and gate.next_retry_at is not None

    fleet.wait_for(waits_for_its_next_poke, timeout=60, what="gate up_for_reschedule")
    assert fleet.wait_run("reschedule_gate", "r1", timeout=120) == "success"

    gate = fleet.task_instances("reschedule_gate", "r1")["gate"]
    assert (str(gate.state), gate.try_number, gate.error) == ("success", 1, None)
    assert fleet.xcom("reschedule_gate", "r1", "gate") == '"opened"'
    log = (fleet.home / "logs" / "reschedule_gate" / "r1" / "gate" / "-1" / "1.log").read_text()
    assert "gate poked in try 1: done=False" in log
    assert "gate poked in try 1: done=True" in log
    assert "try 1 ended up_for_reschedule" in log
    assert "zombie" not in fleet.log("scheduler")


def test_a_rescheduled_sensor_past_its_timeout_fails_in_one_line(sensor_fleet) -> None:
    fleet = sensor_fleet
    fleet.trigger("reschedule_timeout", "r1")

    assert fleet.wait_run("reschedule_timeout", "r1", timeout=120) == "failed"
    never = fleet.task_instances("reschedule_timeout", "r1")["never"]
    assert (str(never.state), never.try_number) == ("failed", 1)
    assert never.error is not None and "\n" not in never.error
    assert never.error.startswith("SensorTimeout: sensor never timed out: not done after ")
    assert never.error.endswith("(timeout 2s)")


@pytest.mark.parametrize("mode", ["poke", "reschedule"])
def test_a_classic_sensor_pokes_until_done_in_one_try_in_either_mode(sensor_fleet, mode) -> None:
    fleet = sensor_fleet
    fleet.trigger(f"classic_{mode}", "r1")

    assert fleet.wait_run(f"classic_{mode}", "r1", timeout=150) == "success"
    wait = fleet.task_instances(f"classic_{mode}", "r1")["wait"]
    assert (str(wait.state), wait.try_number, wait.error) == ("success", 1, None)
    assert fleet.xcom(f"classic_{mode}", "r1", "wait") == f'"{mode} opened"'
    log = (fleet.home / "logs" / f"classic_{mode}" / "r1" / "wait" / "-1" / "1.log").read_text()
    assert "wait poked in try 1: done=False" in log
    assert "wait poked in try 1: done=True" in log
    assert ("try 1 ended up_for_reschedule" in log) is (mode == "reschedule")
