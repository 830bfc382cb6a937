"""Small Airflow helpers provider packages import at run time, under ``airflow.utils.*``.

Each is what the provider uses of it: ``NOTSET`` (an argument not given), ``import_string``,
``SkipMixin`` (the base of branch operators that skip through the store, as ``Choice`` does),
``XCOM_RETURN_KEY``.
"""

from __future__ import annotations

import importlib
import os
import re
import signal
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, NamedTuple

from tradewind.airflow_paths.names import AIRFLOW_VERSION

__all__ = ["AIRFLOW_VERSION", "NOTSET", "XCOM_RETURN_KEY", "ArgNotSet", "SkipMixin"]
#: The key of a task's result among its XComs.
XCOM_RETURN_KEY: Final = "return_value"


class ArgNotSet:
    """The type of ``NOTSET``: an argument the caller did not give (None may be a value)."""

    _instance: ArgNotSet | None = None

    def __new__(cls) -> ArgNotSet:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOTSET"

    def __bool__(self) -> bool:
        return False

    @staticmethod
    def is_arg_set(value: Any) -> bool:
        return not isinstance(value, ArgNotSet)


NOTSET: Final = ArgNotSet()


def is_arg_set(value: Any) -> bool:
    return not isinstance(value, ArgNotSet)


def import_string(dotted_path: str) -> Any:
    """The object at ``package.module.Name``; ImportError naming the path if there is none."""
    module_path, _, name = dotted_path.rpartition(".")
    if not module_path:
        raise ImportError(f"{dotted_path} is not a dotted path to a module's attribute")
    module = importlib.import_module(module_path)
    try:
        return getattr(module, name)
    except AttributeError:
        raise ImportError(f"module {module_path} has no attribute {name}") from None


def qualname(value: Any) -> str:
    """``module.Name`` of a class, a function or an object's class."""
    target = value if hasattr(value, "__qualname__") else type(value)
    return f"{target.__module__}.{target.__qualname__}"


class XCom:
    """Airflow's XCom model, as far as providers use it inside a task: the XComs of this run's
    tasks (``get_value``, ``get_one``) and the running task's own (``set``), through its
    supervisor. Another run's XComs are refused in one line: a try reads only its own run's."""

    @classmethod
    def get_value(cls, *, ti_key: Any, key: str = XCOM_RETURN_KEY) -> Any:
        return cls.get_one(
            key=key,
            dag_id=ti_key.dag_id,
            run_id=ti_key.run_id,
            task_id=ti_key.task_id,
            map_index=ti_key.map_index,
        )

    @classmethod
    def get_one(
        cls,
        *,
        key: str = XCOM_RETURN_KEY,
        dag_id: str | None = None,
        task_id: str | None = None,
        run_id: str | None = None,
        map_index: int | None = None,
        **ignored: Any,
    ) -> Any:
        ti = _running_ti(dag_id, run_id)
        index = None if map_index is None or map_index < 0 else map_index
        return ti.client.get_xcom(task_id or ti.task_id, key, index)

    @classmethod
    def set(
        cls,
        key: str,
        value: Any,
        *,
        dag_id: str | None = None,
        task_id: str | None = None,
        run_id: str | None = None,
        map_index: int = -1,
        **ignored: Any,
    ) -> None:
        ti = _running_ti(dag_id, run_id)
        if task_id not in (None, ti.task_id) or map_index not in (-1, ti.map_index):
            raise ValueError(
                f"XCom.set: a task sets only its own XComs ({ti.task_id}), not {task_id}'s"
            )
        ti.xcom_push(key, value)


def _running_ti(dag_id: str | None, run_id: str | None) -> Any:
    from tradewind.context import get_current_context

    ti = get_current_context()["ti"]
    if (dag_id or ti.dag_id, run_id or ti.run_id) != (ti.dag_id, ti.run_id):
        raise ValueError(
            f"XCom of {dag_id}/{run_id}: a task reads the XComs of its own run only "
            f"({ti.dag_id}/{ti.run_id})"
        )
    return ti


class SkipMixin:
    """Airflow's mix-in of operators that skip tasks after them.

    On Tradewind an operator chooses what runs next by its result (``tradewind/branching.py``);
    a provider operator calling ``skip`` directly is refused with one line.
    """

    def skip(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"{type(self).__name__}.skip(): skipping other tasks from inside a task is not "
            "supported by Tradewind; use a branch operator"
        )

    def skip_all_except(self, ti: Any, branch_task_ids: Any) -> None:
        self.skip(ti, branch_task_ids)


def merge_dicts(left: dict[Any, Any], right: dict[Any, Any]) -> dict[Any, Any]:
    """``left`` updated by ``right``, nested dictionaries merged rather than replaced."""
    merged = dict(left)
    for key, value in right.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_dicts(merged[key], value)
        else:
            merged[key] = value
    return merged


def to_boolean(value: str | bool | None) -> bool:
    """``"true"``, ``"t"``, ``"y"``, ``"yes"``, ``"1"`` (any case) as True; anything else False."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "t", "y", "yes", "1")


def iter_namespace(namespace: Any) -> Any:
    """The modules directly below the package ``namespace`` (``pkgutil.iter_modules``)."""
    import pkgutil

    return pkgutil.iter_modules(namespace.__path__, namespace.__name__ + ".")


def prune_dict(value: Any, mode: str = "strict") -> Any:
    """``value`` without its None entries (``mode="truthy"``: without its falsy ones), at depth."""

    def dropped(item: Any) -> bool:
        return item is None if mode == "strict" else not item

    if isinstance(value, dict):
        pruned = {}
        for key, item in value.items():
            if isinstance(item, dict | list):
                item = prune_dict(item, mode)
            if not dropped(item):
                pruned[key] = item
        return pruned
    if isinstance(value, list):
        kept = [prune_dict(item, mode) if isinstance(item, dict | list) else item for item in value]
        return [item for item in kept if not dropped(item)]
    return value


def exactly_one(*values: Any) -> bool:
    """Whether exactly one of ``values`` is truthy."""
    return sum(map(bool, values)) == 1


def at_most_one(*values: Any) -> bool:
    """Whether at most one of ``values`` is truthy (NOTSET counts as not given)."""
    return sum(1 for v in values if v and not isinstance(v, ArgNotSet)) <= 1


def mask_secret(secret: Any, name: str | None = None) -> None:
    """Mask ``secret`` in the try's log (its values, for a mapping); nothing outside a task."""
    from tradewind.connections import mask_secret as mask
    from tradewind.connections import sensitive_values

    values = list(sensitive_values(secret, True)) if isinstance(secret, dict | list) else [secret]
    for value in values:
        if isinstance(value, str) and value:
            try:
                mask(value)
            except RuntimeError:  # not in a task: no log to mask
                return


def redact(value: Any, name: str | None = None, max_depth: int | None = None) -> Any:
    """``value`` as logs show it: the supervisor masks secrets in the lines themselves."""
    return value


def chunks(items: list[Any], chunk_size: int) -> Any:
    """``items`` in consecutive lists of ``chunk_size``."""
    if chunk_size <= 0:
        raise ValueError("chunk_size must be a positive number")
    for start in range(0, len(items), chunk_size):
        yield items[start : start + chunk_size]


def is_container(value: Any) -> bool:
    """Whether ``value`` is iterable and not a string."""
    return hasattr(value, "__iter__") and not isinstance(value, str | bytes)


def as_flattened_list(iterable: Any) -> list[Any]:
    """``[[a, b], [c]]`` as ``[a, b, c]``."""
    return [item for sub in iterable for item in sub]


def poke_mode_only(cls: Any) -> Any:
    """Airflow's class decorator for sensors that only poke: ``mode="reschedule"`` is refused."""
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("mode", "poke") != "poke":
            raise ValueError(f"{cls.__name__} only pokes: mode must be 'poke'")
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


class NoOpCollector:
    """Airflow's hook-level lineage collector, when nothing collects: every call does nothing.

    Tradewind keeps no OpenLineage events; providers report lineage through it unconditionally.
    """

    def __getattr__(self, name: str) -> Any:
        def nothing(*args: Any, **kwargs: Any) -> None:
            return None

        return nothing

    @property
    def collected_assets(self) -> Any:
        return None

    @property
    def has_collected(self) -> bool:
        return False


HookLineageCollector = NoOpCollector
_COLLECTOR = NoOpCollector()


def get_hook_lineage_collector() -> NoOpCollector:
    return _COLLECTOR


def determine_kwargs(python_callable: Any, op_args: Any, kwargs: Any) -> dict[str, Any]:
    """The keyword arguments of ``kwargs`` that ``python_callable`` accepts (all with ``**``)."""
    import inspect

    parameters = inspect.signature(python_callable).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return dict(kwargs)
    named = list(parameters)[len(op_args) :]
    return {name: kwargs[name] for name in named if name in kwargs}


class BaseOperatorLink:
    """A link an operator adds to its task in Airflow's UI; Tradewind's UI shows none yet."""

    name: str = ""
    operators: Any = ()

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        raise NotImplementedError(f"{type(self).__name__} must define get_link()")


def add_deprecated_classes(classes: Any, package: str, *args: Any, **kwargs: Any) -> None:
    """Airflow keeps a provider's moved classes importable from their old modules; Tradewind
    keeps only the new paths (the old ones fail their import, naming the module)."""
    return None


def md5(data: bytes = b"") -> Any:
    """An MD5 hash object for ids and fingerprints, never for security (so it works where
    FIPS mode forbids MD5 for security)."""
    import hashlib

    return hashlib.md5(data, usedforsecurity=False)


def is_async_callable(func: Any) -> bool:
    """Whether calling ``func`` gives a coroutine: an ``async def``, a partial of one, or an
    object whose ``__call__`` is one (how decorators choose their async path)."""
    import functools
    import inspect

    while isinstance(func, functools.partial):
        func = func.func
    call = None if inspect.isroutine(func) else type(func).__dict__.get("__call__")
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(call)


class timeout:
    """``with timeout(seconds):`` raises ``AirflowTaskTimeout`` in the block after ``seconds``
    (SIGALRM, so on the main thread, where a try runs its task; elsewhere the block is not
    bounded, as signals reach only the main thread)."""

    def __init__(self, seconds: float = 1, error_message: str = "Timeout") -> None:
        self.seconds = seconds
        self.error_message = f"{error_message}, PID: {os.getpid()}"
        self._armed = False

    def _expired(self, signum: int, frame: Any) -> None:
        from tradewind.exceptions import AirflowTaskTimeout

        raise AirflowTaskTimeout(self.error_message)

    def __enter__(self) -> timeout:
        if threading.current_thread() is threading.main_thread() and self.seconds > 0:
            self._previous = signal.signal(signal.SIGALRM, self._expired)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self._armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
            self._armed = False


def pod_mutation_hook(pod: Any) -> None:
    """Airflow's cluster policy for Kubernetes pods: Tradewind has none (the pod is as built)."""


#: Airflow's home, where a provider looks for its own files (``AIRFLOW_HOME``, as Airflow reads it).
AIRFLOW_HOME: Final = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")


_KEY = re.compile(r"^[\w.-]+$")


def validate_key(k: str, max_length: int = 250) -> None:
    """A task or group id as Airflow accepts it: letters, digits, ``_``, ``.``, ``-``; bounded."""
    if not isinstance(k, str):
        raise TypeError(f"the key must be a str, got {type(k).__name__}")
    if len(k) > max_length:
        raise ValueError(f"the key {k[:20]!r}... is longer than {max_length} characters")
    if not _KEY.match(k):
        raise ValueError(
            f"the key {k!r} may hold only letters, digits, underscores, dots and dashes"
        )


class TaskInstanceKey(NamedTuple):
    """What identifies a try: an operator link's ``get_link`` gets one (``ti_key``)."""

    dag_id: str
    task_id: str
    run_id: str
    try_number: int = 1
    map_index: int = -1


def convert_camel_to_snake(camel_str: str) -> str:
    """``jobReference`` as ``job_reference`` (BigQuery's API fields as the hook's arguments)."""
    return re.sub("(?!^)([A-Z]+)", r"_\1", camel_str).lower()


class DagRunType(StrEnum):
    """How a run came to be, as ``dag_run.run_type`` says it."""

    BACKFILL_JOB = "backfill"
    SCHEDULED = "scheduled"
    MANUAL = "manual"
    ASSET_TRIGGERED = "asset_triggered"


@dataclass
class StartTriggerArgs:
    """What an operator that starts from a trigger declares (``start_trigger_args``).

    Tradewind never starts a task on the triggerer: such an operator's ``start_from_trigger``
    is not acted on, and its ``execute`` runs on a worker (and may defer from there).
    """

    trigger_cls: str
    next_method: str
    trigger_kwargs: dict[str, Any] | None = None
    next_kwargs: dict[str, Any] | None = None
    timeout: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def getuser() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def patch_environ(new_env_variables: dict[str, str]) -> Any:
    """A context manager setting environment variables for its block, restoring them after."""
    import contextlib
    import os

    @contextlib.contextmanager
    def patched() -> Any:
        before = {key: os.environ.get(key) for key in new_env_variables}
        os.environ.update(new_env_variables)
        try:
            yield
        finally:
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    return patched()
