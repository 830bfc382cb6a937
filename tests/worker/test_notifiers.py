"""A provider's notifier as a task's callback (``BaseNotifier``, tradewind/notifier.py): its
templated fields rendered with the try's context, then ``notify``; one that fails is logged and
leaves the try's outcome as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.state.harness import Home
from tests.worker.test_supervisor import out, run_tries, start, supervised_home, try_log

DAGS = """
from pathlib import Path

from airflow.sdk.bases.notifier import BaseNotifier  # what common-compat picks on Airflow 3
from airflow.sdk import DAG, task


class Note(BaseNotifier):
    template_fields = ("text",)

    def __init__(self, text):
        super().__init__()
        self.text = text

    def notify(self, context):
        if self.text == "fail":
            raise RuntimeError("the channel is down")
        with open(Path({out!r}) / "notes", "a") as f:
            f.write(self.text + "\\n")


@task(on_success_callback=Note("{{{{ ti.task_id }}}} done in {{{{ run_id }}}}"))
def fruit():
    return 1


@task(on_success_callback=Note("fail"))
def broken_notifier():
    return 2


with DAG("notified"):
    fruit() >> broken_notifier()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with supervised_home(tmp_path, monkeypatch, DAGS) as made:
        yield made


def test_a_notifier_renders_its_fields_then_notifies_and_its_failure_is_only_logged(
    home: Home,
) -> None:
    run_pk, pending = start(home, "notified")

    assert run_tries(home, run_pk, pending) == ["success", "success"]

    run_id = home.run(run_pk).run_id
    assert out(home, "notes") == [f"fruit done in {run_id}"]
    log = try_log(home, run_pk, "broken_notifier", 1)
    assert "Note failed to notify" in log and "the channel is down" in log
