"""What each face of the store (``state/*/__init__.py``) runs when a name of it is first asked for.

A face names its modules for the type checker only; at run time a name's module is imported the
first time the name is used (PEP 562), so a process pays only for what it reads: the backend
helper reads one constant of the core without loading SQLAlchemy, and the command line imports
Alembic only when it migrates (docs/decisions/state-in-layers.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the face ``package``: ``module_of`` maps each of its names
    to the module (under ``package``) that defines it; a name found is kept on the face."""

    def getattr_of_face(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return getattr_of_face
