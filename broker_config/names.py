"""Every name Tradewind puts on the broker, built here and nowhere else.

- ``tradewind.execute_task_instance``: the one Celery task; its only argument is a message.
- queues: a task's ``queue`` option, used as the Celery queue name as is (``default`` unless set).
- the embedded broker's folders: ``<TRADEWIND_HOME>/broker/{queue,processed,control}``.
- dead letters (entries a transport could not decode, kept with the reason): the Redis list
  ``tradewind.dead_letters`` in the broker's database, newest first; on the embedded broker, one
  file per entry in ``<TRADEWIND_HOME>/broker/dead_letters``.

Every other Redis key on the broker is kombu's own (``default`` and the other queue lists,
``unacked``, ``unacked_index``, ``_kombu.binding.*``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

EXECUTE_TASK_NAME: Final = "tradewind.execute_task_instance"
DEFAULT_QUEUE: Final = "default"
DEAD_LETTERS_KEY: Final = "tradewind.dead_letters"


def queue_name(task_queue: str | None) -> str:
    return task_queue or DEFAULT_QUEUE


def dead_letter_folder(broker_folder: Path) -> Path:
    """Where the embedded broker keeps the message files it could not read."""
    return broker_folder / "dead_letters"


def filesystem_folders(broker_folder: Path) -> dict[str, str]:
    """The folders kombu's filesystem transport reads and writes (one folder: any process)."""
    queue = broker_folder / "queue"
    processed = broker_folder / "processed"
    # Broadcasts (Flower, `celery inspect`) live here too, not in the working directory.
    control = broker_folder / "control"
    dead_letters = dead_letter_folder(broker_folder)
    for folder in (queue, processed, control, dead_letters):
        folder.mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "processed_folder": str(processed),
        "control_folder": str(control),
        # Tradewind's own option (kombu ignores it): read by broker_config.filesystem.
        "dead_letter_folder": str(dead_letters),
    }
