"""Times each phase of each try in a Celery worker, in wall time (``bench/fan_out_timeline.py``).

On the fleet's PYTHONPATH with TW_PHASE_TRACE set, a Celery worker wraps the functions below as
their modules are imported and writes one line per call to ``$TW_PHASE_TRACE/trace-<pid>.txt``:
the thread, the function, its start and end (``time.perf_counter``). Other processes ignore it.
"""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time
from typing import Any

PHASES = {
    "celery.app.trace": ["fast_trace_task"],
    "celery.concurrency.thread": ["TaskPool.on_apply"],
    "celery.worker.consumer.consumer": ["Consumer._flush_events"],
    "celery.worker.request": ["Request.acknowledge"],
    "kombu.transport.redis": ["MultiChannelPoller._register_BRPOP"],
    "broker_config.redis_transport": ["Channel._brpop_read"],
    "broker_config.publish": ["publish_many"],
    "worker.celery_app": ["execute_task_instance"],
    "state.engine.try_life": ["claim", "record"],
    "worker.supervisor.execute": ["_record", "run_claimed", "TryLog"],
    "worker.fork_server.client": ["start_python_task"],
    "worker.supervisor.loop": ["supervise_process"],
}


def _install(folder: str) -> None:
    out = open(f"{folder}/trace-{os.getpid()}.txt", "w", buffering=1 << 16)  # noqa: SIM115
    lock = threading.Lock()
    atexit.register(out.flush)

    def timed(name: str, function: Any) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                line = f"{threading.get_ident()} {name} {started:.6f} {time.perf_counter():.6f}\n"
                with lock:
                    out.write(line)

        return wrapper

    def wrap(module: Any, qualified: str) -> None:
        *path, name = qualified.split(".")
        owner = module
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, timed(qualified, getattr(owner, name)))

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname not in PHASES:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return None
            load = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                load(module)
                for qualified in PHASES[fullname]:
                    wrap(module, qualified)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, Finder())


if os.environ.get("TW_PHASE_TRACE") and "celery" in " ".join(sys.orig_argv):
    _install(os.environ["TW_PHASE_TRACE"])
