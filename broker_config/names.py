"""Every name Tradewind puts on the broker, built here and nowhere else.

- ``tradewind.execute_task_instance``: the one Celery task; its only argument is a message.
- queues: a task's ``queue`` option, used as the Celery queue name as is (``default`` unless set).
- the embedded broker's folders: ``<TRADEWIND_HOME>/broker/{queue,processed,control}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

EXECUTE_TASK_NAME: Final = "tradewind.execute_task_instance"
DEFAULT_QUEUE: Final = "default"


def queue_name(task_queue: str | None) -> str:
    return task_queue or DEFAULT_QUEUE


def filesystem_folders(broker_folder: Path) -> dict[str, str]:
    """The folders kombu's filesystem transport reads and writes (one folder: any process)."""
    queue = broker_folder / "queue"
    processed = broker_folder / "processed"
    # Broadcasts (Flower, `celery inspect`) live here too, not in the working directory.
    control = broker_folder / "control"
    for folder in (queue, processed, control):
        folder.mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "processed_folder": str(processed),
        "control_folder": str(control),
    }
