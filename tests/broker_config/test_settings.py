"""The Celery settings for long tasks (DESIGN.md §8), and how a message goes out.

Each setting is there for a failure seen on a real fleet (FIELD-NOTES.md); the source check at the
end keeps the reason next to every setting.
"""

from __future__ import annotations

import ast
import io
import tokenize
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import broker_config
from broker_config import EXECUTE_TASK_NAME, make_celery_app, publish_many
from broker_config import settings as settings_module
from broker_config.settings import VISIBILITY_TIMEOUT_SECONDS, celery_settings

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_SOURCE = Path(settings_module.__file__)

RELIABILITY = {
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
    # False: a broker outage must not cancel the tries running (DESIGN.md §7 "Outages").
    "worker_cancel_long_running_tasks_on_connection_loss": False,
    "task_serializer": "json",
    "accept_content": ["json"],
    "result_serializer": "json",
    "result_backend": None,
    "task_ignore_result": True,
    "worker_send_task_events": True,
    "worker_hijack_root_logger": False,
}


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "filesystem://"])
def test_the_reliability_settings_are_set(url: str, tmp_path: Path) -> None:
    made = celery_settings(url, tmp_path)
    assert {key: made[key] for key in RELIABILITY} == RELIABILITY
    assert made["broker_url"] == url


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "rediss://cache:6380/1"])
def test_redis_gets_a_visibility_timeout_longer_than_any_task(url: str, tmp_path: Path) -> None:
    options = celery_settings(url, tmp_path)["broker_transport_options"]
    assert options == {"visibility_timeout": VISIBILITY_TIMEOUT_SECONDS}
    assert VISIBILITY_TIMEOUT_SECONDS >= 24 * 3600


def test_the_embedded_broker_keeps_its_folders_under_the_broker_folder(tmp_path: Path) -> None:
    options = celery_settings("filesystem://", tmp_path / "broker")["broker_transport_options"]
    assert options["data_folder_in"] == options["data_folder_out"] == str(tmp_path / "broker/queue")
    assert Path(options["processed_folder"]).is_dir()
    assert options["polling_interval"] > 0


def test_the_app_carries_the_settings(tmp_path: Path) -> None:
    app = make_celery_app("redis://127.0.0.1:6379/0", tmp_path)
    for key, value in RELIABILITY.items():
        assert app.conf[key] == value, key
    assert app.conf.broker_transport_options["visibility_timeout"] == VISIBILITY_TIMEOUT_SECONDS


class FakeApp:
    """The two calls ``publish_many`` makes on a Celery app of the embedded broker, recorded."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.conf = SimpleNamespace(broker_url="filesystem://localhost/")

    @contextmanager
    def producer_or_acquire(self) -> Any:
        yield "producer"

    def send_task(self, name: str, **options: Any) -> None:
        self.sent.append((name, options))


class Queued:
    def __init__(self, ti_id: int, queue: str) -> None:
        self.ti_id, self.try_number, self.queue = ti_id, 3, queue
        self.dag_id, self.run_id, self.task_id, self.map_index = "d", "r", "t", -1


def test_publish_sends_ids_only_on_the_tasks_queue_without_delay() -> None:
    app = FakeApp()
    assert publish_many(app, [Queued(1, "default"), Queued(2, "gpu")]) == 2  # type: ignore[arg-type]
    first, second = app.sent
    assert first == (
        EXECUTE_TASK_NAME,
        {
            "kwargs": {
                "message": {
                    "ti_id": 1,
                    "try_number": 3,
                    "dag_id": "d",
                    "run_id": "r",
                    "task_id": "t",
                    "map_index": -1,
                }
            },
            "queue": "default",
            "producer": "producer",
            "ignore_result": True,
            "argsrepr": "()",
            "kwargsrepr": '{"message": {"ti_id": 1, "try_number": 3, "dag_id": "d", "run_id": "r", '
            '"task_id": "t", "map_index": -1}}',
        },
    )
    assert second[1]["queue"] == "gpu"


def python_files() -> list[Path]:
    packages = ("tradewind", "scheduler", "worker", "state", "broker_config")
    return [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]


def test_no_message_is_ever_delayed_in_the_broker() -> None:
    """Delays live in SQL: on Redis a delayed message past the visibility timeout runs again."""
    offenders = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg in ("countdown", "eta"):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def setting_lines() -> dict[int, str]:
    """Line number -> key of every entry of the dict literal ``celery_settings`` returns."""
    tree = ast.parse(SETTINGS_SOURCE.read_text())
    [function] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "celery_settings"
    ]
    [literal] = [n for n in ast.walk(function) if isinstance(n, ast.Dict)]
    return {key.lineno: key.value for key in literal.keys if isinstance(key, ast.Constant)}


def comment_lines() -> set[int]:
    source = SETTINGS_SOURCE.read_text()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.start[0] for token in tokens if token.type == tokenize.COMMENT}


def test_every_setting_says_why_in_a_comment() -> None:
    """A comment on the setting's line, or ending on the line just above it (DESIGN.md §8)."""
    lines, comments = setting_lines(), comment_lines()
    assert len(lines) >= len(RELIABILITY)
    bare = [key for number, key in lines.items() if not {number, number - 1} & comments]
    assert bare == []


def test_broker_config_names_its_exports() -> None:
    assert set(broker_config.__all__) >= {"make_celery_app", "publish_many", "TaskInstanceMessage"}
