"""Removing the logs of deleted runs: ``tradewind db clean`` and the scheduler's retention.

A try's log lives under ``TRADEWIND_HOME/logs/<dag>/<run>/...`` on the host that ran it
(``log_path``), and under the same path below ``TRADEWIND_REMOTE_LOGS_URL`` when that is set.
The clean removes a run's folder on the host it runs on and at the remote URL; a worker host's
own folder is its operator's to prune (docs/operations.md says how).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tradewind.settings import Settings, log_path


def run_log_folder(logs_folder: Path, dag_id: str, run_id: str) -> Path:
    """The folder holding every try's log of one run (what ``log_path`` puts them under)."""
    # <dag>/<run>/<task>/<map_index>/<try>.log: three levels above a try's file.
    return log_path(logs_folder, dag_id, run_id, "_", -1, 1).parents[2]


class RunLogs:
    """Removes the log folders of runs, here and at ``TRADEWIND_REMOTE_LOGS_URL``."""

    def __init__(self, settings: Settings) -> None:
        self.local = settings.logs_folder
        self.remote_url = settings.remote_logs_url
        self._remote: Any = None

    def remove(self, runs: Iterable[tuple[str, str]]) -> int:
        """Remove the runs' folders; how many existed here."""
        removed = 0
        for dag_id, run_id in runs:
            folder = run_log_folder(self.local, dag_id, run_id)
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
            if self.remote_url is not None:
                self._remove_remote(run_log_folder(Path("/"), dag_id, run_id))
        return removed

    def _remove_remote(self, folder: Path) -> None:
        fs, root = self._filesystem()
        path = f"{root.rstrip('/')}{folder}"
        try:
            fs.rm(path, recursive=True)
        except FileNotFoundError:
            return  # a run whose logs were never uploaded

    def _filesystem(self) -> tuple[Any, str]:
        if self._remote is None:
            import fsspec  # only for a clean with remote logs

            self._remote = fsspec.core.url_to_fs(self.remote_url)
        return self._remote  # type: ignore[no-any-return]
