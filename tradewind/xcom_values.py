"""Values an XCom holds that JSON has no type for, encoded into JSON and back in the task process.

One such type so far: ``ObjectStoragePath``, held as ``{"__tradewind_type__": "ObjectStoragePath",
...}`` (``ObjectStoragePath.to_xcom``), at any depth of a list or dict. So a task that returns a
path hands its downstream a path, as in Airflow. A process that never made a path cannot be
pushing one: encoding then costs one dict look-up (the path's module is not even imported).
"""

from __future__ import annotations

import sys
from typing import Any

TYPE_KEY = "__tradewind_type__"
_PATH_MODULE = "tradewind.object_storage_path"


def encode(value: Any) -> Any:
    """``value`` with every ``ObjectStoragePath`` in it replaced by its JSON form."""
    module = sys.modules.get(_PATH_MODULE)
    if module is None:
        return value
    return _encoded(value, module.ObjectStoragePath)


def _encoded(value: Any, path_type: type) -> Any:
    if isinstance(value, path_type):
        return value.to_xcom()  # type: ignore[attr-defined]
    if isinstance(value, dict):
        return {key: _encoded(item, path_type) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encoded(item, path_type) for item in value]
    return value


def decode(value: Any) -> Any:
    """``value`` (fresh from JSON: changed in place) with the encoded paths made paths again."""
    if isinstance(value, dict):
        if value.get(TYPE_KEY) is not None:
            return _typed(value)
        for key, item in value.items():
            if isinstance(item, dict | list):
                value[key] = decode(item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                value[index] = decode(item)
    return value


def _typed(value: dict[str, Any]) -> Any:
    if value[TYPE_KEY] != "ObjectStoragePath":
        raise ValueError(f"an XCom holds a value of type {value[TYPE_KEY]!r}, unknown here")
    from tradewind.object_storage_path import ObjectStoragePath

    return ObjectStoragePath.from_xcom(value)
